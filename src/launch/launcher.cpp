#include "launch/launcher.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "hang/flight_recorder.hpp"
#include "hang/flight_recorder_dumps.hpp"
#include "hang/rank_probe.hpp"
#include "hang/stack_shim.hpp"
#include "launch/rank_output.hpp"
#include "run/child.hpp"
#include "run/events_socket.hpp"
#include "run/job_hangs.hpp"
#include "run/job_watch.hpp"
#include "store/run_owner.hpp"

namespace baton::launch {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void on_stop(int sig) {
    g_stop_signal = sig;
}

std::optional<std::string> inherited(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
}

std::string clock_text(std::int64_t unix_ms) {
    return fmt::format("{}.{:03d}", local_time_text(unix_ms, "%Y-%m-%d %H:%M:%S"), static_cast<int>(unix_ms % 1000));
}

// One attempt's local ranks: their processes and their output.
struct Attempt {
    std::vector<RankStream> out, err;  // by local rank
    std::vector<std::string> error_files;
};

// Reads what is waiting on every open output pipe; true when a pipe gave bytes.
bool read_outputs(WorkerGroup& group, Attempt& a, run::JobWatch& watch, std::deque<std::string>& notes, bool quiet) {
    bool got = false;
    char buf[16384];
    const double now = monotonic_seconds();
    for (std::size_t i = 0; i < group.workers().size(); ++i) {
        Worker& w = group.workers()[i];
        for (int* fd : {&w.stdout_fd, &w.stderr_fd}) {
            if (*fd < 0) continue;
            for (int rounds = 0; rounds < 8; ++rounds) {
                const ssize_t n = read(*fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR) continue;
                if (n == 0 || (n < 0 && errno != EAGAIN)) {  // the rank (and its children) closed it
                    close(*fd);
                    *fd = -1;
                    (fd == &w.stdout_fd ? a.out : a.err)[i].finish();
                    break;
                }
                if (n < 0) break;
                got = true;
                const std::string_view bytes(buf, static_cast<std::size_t>(n));
                if (fd == &w.stdout_fd) {
                    a.out[i].feed(bytes, now);
                } else {
                    a.err[i].feed(bytes, now);
                    for (const diagnose::Finding& f : watch.read_output(bytes))
                        if (!quiet) notes.push_front(run::finding_note(f));
                }
            }
        }
    }
    for (RankStream& s : a.out) s.flush_stale(now);
    for (RankStream& s : a.err) s.flush_stale(now);
    return got;
}

// Waits until an output pipe has bytes or `seconds` passed.
void wait_for_output(const WorkerGroup& group, double seconds) {
    std::vector<pollfd> fds;
    for (const Worker& w : group.workers())
        for (int fd : {w.stdout_fd, w.stderr_fd, w.pidfd})
            if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    const int ms = std::max(0, static_cast<int>(seconds * 1000));
    if (fds.empty()) {
        sleep_seconds(ms / 1000.0);
        return;
    }
    ::poll(fds.data(), fds.size(), ms);
}

// The ranks as the hang verdict looks at them.
std::vector<hang::ProbedRank> probed_ranks(const WorkerGroup& group, const LaunchTopology& t) {
    std::vector<hang::ProbedRank> ranks;
    const double now = monotonic_seconds();
    const std::int64_t now_ms = unix_millis();
    for (std::size_t i = 0; i < group.workers().size(); ++i) {
        const Worker& w = group.workers()[i];
        hang::ProbedRank r;
        r.rank = t.global_rank(static_cast<int>(i));
        r.pid = w.pid;
        r.alive = !w.exited;
        r.exit_status = w.exit_status;
        if (w.exited) r.exited_unix_ms = now_ms - static_cast<std::int64_t>((now - w.exited_at) * 1000);
        ranks.push_back(r);
    }
    return ranks;
}

}  // namespace

std::string signal_name(int sig) {
    if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
    return "signal " + std::to_string(sig);
}

std::string root_cause_text(const RankFailure& f) {
    std::string out =
        fmt::format("baton launch: rank {} failed first (local rank {}, pid {}, attempt {}): {} at {}\n", f.rank,
                    f.local_rank, f.pid, f.attempt,
                    f.signal ? "killed by " + signal_name(f.signal) + fmt::format(" (exit status {})", f.exit_status)
                             : fmt::format("exited with {}", f.exit_status),
                    clock_text(f.at_unix_ms));
    if (f.stderr_tail.empty()) {
        out += "  it wrote nothing on stderr (" + f.stderr_log + ")\n";
    } else {
        out += fmt::format("  its last {} stderr line{} ({}):\n", f.stderr_tail.size(),
                           f.stderr_tail.size() == 1 ? "" : "s", f.stderr_log);
        for (const std::string& l : f.stderr_tail) out += "  | " + escaped_line(l) + "\n";
    }
    if (!f.error_file.empty()) out += "  the script's error record (torch's @record): " + f.error_file + "\n";
    if (f.nccl)
        out += fmt::format("  NCCL's first error line came from rank {} at {} ({}):\n  | {}\n", f.nccl->rank,
                           clock_text(f.nccl->at_unix_ms), f.nccl->log, escaped_line(f.nccl->text));
    return out;
}

Result<LaunchResult> run_launch(const LaunchOptions& o) {
    LaunchResult result;
    run::become_subreaper();
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);  // a console that went away must not end the launcher

    WorkerExtras extras = o.extras;
    std::optional<run::EventsSocket> events;
    if (Result<run::EventsSocket> s = run::EventsSocket::open(); s.ok()) {
        events.emplace(std::move(*s));
        extras.events_socket = events->path();
        // The ranks' out-of-memory captures go beside it (docs/memory.md).
        if (const std::string dir = events->directory() + "/memory"; ::mkdir(dir.c_str(), 0700) == 0)
            extras.memory_dir = dir;
    } else {
        std::fprintf(stderr, "baton: the Python hook's step events will not be recorded: %s\n",
                     escaped_line(s.error().message).c_str());
    }
    const store::RunOwner me = store::current_owner();
    extras.owner = store::owner_token(me);
    result.run_dir = o.log_dir + "/" + o.topology.run_id;
    bool shim_tried = false;

    run::JobWatchOptions wo = run::local_job_options(o.name, o.argv, o.thresholds, o.db_path, o.recording);
    if (!extras.gpus.empty()) {  // the ranks' GPUs together, as bound
        std::string all;
        for (const std::string& g : extras.gpus) all += (all.empty() ? "" : ",") + g;
        wo.cuda_visible_devices = all;
    }
    wo.memory_dir = extras.memory_dir;
    run::JobWatch watch(std::move(wo), std::vector<pid_t>{});

    SamplerOptions so = o.sampler;
    so.priming_seconds = std::min(0.1, o.interval_seconds);
    // Made at the first sample, once the ranks run: loading NVML does not delay their start.
    std::optional<Sampler> sampler;
    diagnose::Window window;
    SampleSchedule schedule(o.interval_seconds);
    std::deque<std::string> notes;  // new findings waiting for the rate limit
    double last_note = -1e9;
    int killed = 0;
    const double started = monotonic_seconds();
    const int local = o.topology.nproc_per_node;
    run::JobHangs hangs(o.hang, o.stop_on_hang, "baton launch", result.run_dir + "/stacks");

    for (int attempt = 0;; ++attempt) {
        result.attempts = attempt + 1;
        const std::string dir = result.run_dir + "/attempt_" + std::to_string(attempt);
        Attempt a;
        std::vector<WorkerSpec> specs;
        for (int lr = 0; lr < local; ++lr) {
            const std::string rank_dir = dir + "/" + std::to_string(lr);
            const int rank = o.topology.global_rank(lr);
            const bool shown = !o.console_ranks || o.console_ranks->count(lr);
            a.out.emplace_back(rank, shown ? STDOUT_FILENO : -1, o.tee, rank_dir + "/stdout.log", 0);
            a.err.emplace_back(rank, shown ? STDERR_FILENO : -1, o.tee, rank_dir + "/stderr.log", 20);
            for (RankStream* s : {&a.out.back(), &a.err.back()})
                if (Status st = s->open(o.log_group); !st.ok())
                    // Said as a plain failure whatever its cause: the caller's 126 and 127 are
                    // for a program that cannot be started.
                    return make_error(st.error().message);
            if (!shim_tried) {
                // The ranks' stack handler and their stacks stay with the run's logs (the run directory
                // exists now: the first rank's logs are open).
                shim_tried = true;
                if (Status st = hang::install_shim(result.run_dir + "/python", result.run_dir + "/stacks"); st.ok()) {
                    extras.stack_shim_dir = result.run_dir + "/python";
                    extras.stacks_dir = result.run_dir + "/stacks";
                    // The Flight Recorder's dumps and pipes beside the stacks (unless the user put them elsewhere).
                    const std::string fr = extras.stacks_dir + "/fr";
                    if (Status made = hang::make_flight_recorder_dir(fr); made.ok()) {
                        extras.flight_recorder_dir = fr;
                        hangs.set_flight_recorder(hang::flight_recorder_paths(fr, inherited));
                    } else {
                        std::fprintf(stderr, "baton launch: no Flight Recorder dumps: %s\n",
                                     escaped_line(made.error().message).c_str());
                    }
                } else {
                    std::fprintf(stderr, "baton launch: baton stacks will not reach the ranks: %s\n",
                                 escaped_line(st.error().message).c_str());
                }
            }
            WorkerExtras x = extras;
            x.error_file = rank_dir + "/error.json";
            x.nccl_debug_file = rank_dir + "/nccl.%h.%p.log";
            a.error_files.push_back(x.error_file);
            specs.push_back({o.argv, worker_environment(o.topology, lr, attempt, x, inherited)});
        }
        Result<WorkerGroup> started_group = WorkerGroup::start(specs);
        if (!started_group.ok()) return started_group.error();
        WorkerGroup group = std::move(*started_group);
        std::vector<pid_t> pids;
        for (const Worker& w : group.workers()) pids.push_back(w.pid);
        watch.set_roots(pids);

        std::optional<RankFailure> failure;
        double kill_at = -1, give_up_at = -1;
        hangs.restart();  // this attempt's ranks
        while (!group.all_exited()) {
            const double now = monotonic_seconds();
            if (events) watch.read_events(events->drain());  // first: an OOM's capture before its error's line
            read_outputs(group, a, watch, notes, o.quiet);
            for (std::size_t i : group.poll()) {
                const Worker& w = group.workers()[i];
                if (w.exit_status == 0 || failure || result.stopped_on_hang) continue;
                RankFailure f;
                f.local_rank = static_cast<int>(i);
                f.rank = o.topology.global_rank(f.local_rank);
                f.pid = w.pid;
                f.exit_status = w.exit_status;
                f.signal = w.signal;
                f.at_unix_ms = unix_millis();
                f.attempt = attempt;
                failure = f;
                if (!result.stop_signal) {
                    // The others cannot finish without it (their collectives would wait forever).
                    group.signal_all(SIGTERM);
                    if (kill_at < 0) kill_at = now + o.grace_seconds;
                }
            }
            if (g_stop_signal) {
                const int sig = g_stop_signal;
                g_stop_signal = 0;
                result.stop_signal = sig;
                group.signal_all(sig);
                if (kill_at < 0) kill_at = now + o.grace_seconds;
            }
            if (kill_at < 0 && give_up_at < 0 && !extras.stacks_dir.empty() &&
                hangs.turn(watch, [&] { return probed_ranks(group, o.topology); })) {
                // on_hang = "stop": the verdict is the root cause; the ranks go as on a failure.
                result.stopped_on_hang = true;
                group.signal_all(SIGTERM);
                kill_at = monotonic_seconds() + o.grace_seconds;
            }
            if (kill_at >= 0 && now >= kill_at) {
                killed += group.kill_all();
                kill_at = -1;
                give_up_at = now + o.last_wait_seconds;
            }
            if (give_up_at >= 0 && now >= give_up_at) {
                result.stuck = group.wait_gone(0);
                break;
            }
            if (now >= schedule.next()) {
                Snapshot snap;
                if (!sampler) sampler.emplace(so);
                sampler->take(snap);
                schedule.taken(monotonic_seconds());
                run::push_to_window(window, std::move(snap), o.thresholds.window_seconds);
                for (const diagnose::Finding& f : watch.sample(window))
                    if (!o.quiet && f.severity != diagnose::Severity::info) notes.push_back(run::finding_note(f));
            }
            if (!notes.empty() && now - last_note >= 5) {
                std::fprintf(stderr, "%s\n", printable(notes.front()).c_str());
                notes.pop_front();
                last_note = now;
            }
            wait_for_output(group, std::min(0.02, std::max(0.0, schedule.next() - monotonic_seconds())));
        }
        // What the ranks wrote last (a traceback) may still be in the pipes; a pipe a leftover
        // child still holds open is not waited for long.
        for (int i = 0; i < 100 && read_outputs(group, a, watch, notes, o.quiet); ++i) sleep_seconds(0.002);
        if (events) watch.read_events(events->drain());
        // DataLoader workers and other leftovers of the ranks end with the attempt.
        if (result.stuck.empty()) {
            const TeardownReport left = group.end(std::min(o.grace_seconds, 2.0), o.last_wait_seconds);
            killed += left.killed;
            result.stuck = left.stuck;
        }
        read_outputs(group, a, watch, notes, o.quiet);
        for (RankStream& s : a.out) s.finish();
        for (RankStream& s : a.err) s.finish();
        if (failure) {
            const auto i = static_cast<std::size_t>(failure->local_rank);
            failure->stderr_tail.assign(a.err[i].tail().begin(), a.err[i].tail().end());
            failure->stderr_log = a.err[i].log_path();
            if (access(a.error_files[i].c_str(), R_OK) == 0) failure->error_file = a.error_files[i];
            for (std::size_t r = 0; r < a.err.size(); ++r)
                for (const RankStream* s : {&a.err[r], &a.out[r]})
                    if (const auto& m = s->first_nccl_error();
                        m && (!failure->nccl || m->unix_ms < failure->nccl->at_unix_ms))
                        failure->nccl = RankFailure::NcclLine{o.topology.global_rank(static_cast<int>(r)), m->text,
                                                              s->log_path(), m->unix_ms};
        }
        result.failure = failure;
        result.hang = hangs.last_verdict();
        if (failure && !result.stop_signal && !result.stopped_on_hang && result.stuck.empty() &&
            attempt < o.topology.max_restarts) {
            std::fputs(printable_text(root_cause_text(*failure)).c_str(), stderr);
            std::fprintf(stderr, "baton launch: restarting the %d local rank(s): attempt %d of %d\n", local,
                         attempt + 1, o.topology.max_restarts);
            continue;
        }
        break;
    }
    for (const std::string& n : notes) std::fprintf(stderr, "%s\n", printable(n).c_str());
    if (result.stop_signal) {
        result.exit_status = 128 + result.stop_signal;
    } else if (result.stopped_on_hang) {
        result.exit_status = hang::kExitHung;  // the summary prints the verdict as the root cause
    } else if (result.failure) {
        result.exit_status = result.failure->exit_status;
    }
    const int signal = result.failure && !result.stop_signal && !result.stopped_on_hang ? result.failure->signal : 0;
    result.stats = watch.finish(result.exit_status, signal, monotonic_seconds() - started, killed);
    return result;
}

}  // namespace baton::launch
