#include "clean/ender.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/clock.hpp"
#include "sample/linux/kept_file.hpp"
#include "sample/linux/pid_signal.hpp"
#include "sample/linux/proc_pid_stat.hpp"

namespace baton::clean {

namespace {

// The same process as listed: the pid exists and started when it did then (zombies count as gone).
enum class Still { same, gone, other };

Still check(const EndTarget& t, const std::string& proc_root) {
    os::ReadBuffer buf;
    os::PidStat st;
    if (!os::read_file(proc_root + "/" + std::to_string(t.pid) + "/stat", buf) || !os::parse_pid_stat(buf.view(), st))
        return Still::gone;
    if (st.starttime != t.start_ticks) return Still::other;
    return st.state == 'Z' ? Still::gone : Still::same;  // a defunct process has ended: it waits for its parent only
}

}  // namespace

const char* end_outcome_name(EndOutcome o) {
    switch (o) {
        case EndOutcome::ended:
            return "ended";
        case EndOutcome::killed:
            return "killed";
        case EndOutcome::gone_before:
            return "gone_before";
        case EndOutcome::reused:
            return "reused";
        case EndOutcome::refused:
            return "refused";
        case EndOutcome::survived:
            return "survived";
    }
    return "?";
}

std::vector<EndResult> end_processes(const std::vector<EndTarget>& targets, double grace_seconds,
                                     const std::string& proc_root) {
    std::vector<EndResult> results;
    std::vector<std::size_t> waiting;  // signalled, not gone yet
    for (const EndTarget& t : targets) {
        EndResult r;
        r.pid = t.pid;
        r.gpu_memory_bytes = t.gpu_memory_bytes;
        const Still s = check(t, proc_root);
        if (s == Still::gone) {
            r.outcome = EndOutcome::gone_before;
        } else if (s == Still::other) {
            r.outcome = EndOutcome::reused;
        } else if (const int e = os::signal_process(static_cast<pid_t>(t.pid), t.start_ticks, SIGTERM, proc_root);
                   e != 0) {
            r.outcome = e == ESRCH ? EndOutcome::gone_before : EndOutcome::refused;
            if (r.outcome == EndOutcome::refused) r.detail = std::strerror(e);
        } else {
            waiting.push_back(results.size());
        }
        results.push_back(r);
    }
    const double deadline = monotonic_seconds() + grace_seconds;
    auto still_there = [&](std::size_t i) { return check(targets[i], proc_root) == Still::same; };
    while (!waiting.empty() && monotonic_seconds() < deadline) {
        std::vector<std::size_t> left;
        for (std::size_t i : waiting)
            if (still_there(i)) left.push_back(i);
        waiting = left;
        if (!waiting.empty()) sleep_seconds(0.02);
    }
    for (std::size_t i : waiting) {
        // Checked again just before the signal: the grace is long enough for a pid to be reused.
        if (!still_there(i)) continue;
        if (const int e =
                os::signal_process(static_cast<pid_t>(targets[i].pid), targets[i].start_ticks, SIGKILL, proc_root);
            e != 0) {
            results[i].outcome = e == ESRCH ? EndOutcome::ended : EndOutcome::refused;
            continue;
        }
        results[i].outcome = EndOutcome::killed;
    }
    // SIGKILL takes effect at once unless the process waits in the kernel (state D).
    const double kill_deadline = monotonic_seconds() + 2;
    for (std::size_t i : waiting)
        while (results[i].outcome == EndOutcome::killed && still_there(i) && monotonic_seconds() < kill_deadline)
            sleep_seconds(0.02);
    for (std::size_t i : waiting)
        if (results[i].outcome == EndOutcome::killed && still_there(i)) results[i].outcome = EndOutcome::survived;
    return results;
}

}  // namespace baton::clean
