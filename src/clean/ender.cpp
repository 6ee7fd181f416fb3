#include "clean/ender.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/clock.hpp"
#include "sample/linux/kept_file.hpp"
#include "sample/linux/pid_signal.hpp"
#include "sample/linux/proc_pid_stat.hpp"
#include "sample/linux/tree_end.hpp"

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
    // Each target a tree of one, ended by os::TreeEnd, side by side: the errno of the last signal
    // kept, and before each signal the start time checked again (a grace is long enough for a pid to
    // be reused). SIGKILL takes effect at once unless the process waits in the kernel (state D): 2 s.
    std::vector<EndResult> results(targets.size());
    std::vector<int> last_errno(targets.size(), 0);
    std::vector<os::TreeEnd> endings;
    endings.reserve(targets.size());
    std::vector<std::size_t> waiting;  // signalled, not gone yet
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const EndTarget& t = targets[i];
        endings.emplace_back(os::TreeEnd::Tree{[&, i](int sig) {
                                                   last_errno[i] =
                                                       os::signal_process(static_cast<pid_t>(targets[i].pid),
                                                                          targets[i].start_ticks, sig, proc_root);
                                                   return last_errno[i] == 0 ? 1 : 0;
                                               },
                                               [&, i] { return check(targets[i], proc_root) == Still::same; }},
                             2.0);
        results[i].pid = t.pid;
        results[i].gpu_memory_bytes = t.gpu_memory_bytes;
        if (const Still s = check(t, proc_root); s != Still::same) {
            results[i].outcome = s == Still::gone ? EndOutcome::gone_before : EndOutcome::reused;
            continue;
        }
        endings[i].begin(monotonic_seconds(), grace_seconds);
        if (last_errno[i] != 0) {  // the SIGTERM found it gone, or was refused: not waited for
            results[i].outcome = last_errno[i] == ESRCH ? EndOutcome::gone_before : EndOutcome::refused;
            if (last_errno[i] != ESRCH) results[i].detail = std::strerror(last_errno[i]);
        } else {
            waiting.push_back(i);
        }
    }
    using Phase = os::TreeEnd::Phase;
    // Stepped until each is gone, stuck, or its SIGKILL reached nothing.
    std::vector<std::size_t> left = waiting;
    while (!left.empty()) {
        std::vector<std::size_t> still;
        for (std::size_t i : left)
            if (const Phase p = endings[i].step(monotonic_seconds());
                p == Phase::grace || (p == Phase::killed && endings[i].killed() > 0))
                still.push_back(i);
        left = std::move(still);
        if (!left.empty()) sleep_seconds(0.02);
    }
    for (std::size_t i : waiting) {
        const os::TreeEnd& e = endings[i];
        if (e.phase() == Phase::stuck) {
            results[i].outcome = EndOutcome::survived;
        } else if (e.phase() == Phase::gone) {
            results[i].outcome = e.killed() > 0 ? EndOutcome::killed : EndOutcome::ended;
        } else {  // the SIGKILL found it gone, or was refused
            results[i].outcome = last_errno[i] == ESRCH ? EndOutcome::ended : EndOutcome::refused;
            if (last_errno[i] != ESRCH) results[i].detail = std::strerror(last_errno[i]);
        }
    }
    return results;
}

}  // namespace baton::clean
