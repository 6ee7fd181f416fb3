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
#include "run/events_socket.hpp"
#include "run/job_hangs.hpp"
#include "run/job_watch.hpp"
#include "run/watch_step.hpp"
#include "sample/linux/tree_end.hpp"
#include "store/run_owner.hpp"

namespace baton::launch {

namespace {

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
bool read_outputs(WorkerGroup& group, Attempt& a, run::WatchStep& step) {
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
                    step.read_output(bytes);
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

namespace {

// The ranks' stack handler and their stacks stay with the run's logs, the Flight Recorder's dumps and
// pipes beside the stacks (unless the user put them elsewhere). What cannot be made is said.
void install_rank_shim(const std::string& run_dir, WorkerExtras& extras, run::JobHangs& hangs) {
    Status st = hang::install_shim(run_dir + "/python", run_dir + "/stacks");
    if (!st.ok()) {
        std::fprintf(stderr, "baton launch: baton stacks will not reach the ranks: %s\n",
                     escaped_line(st.error().message).c_str());
        return;
    }
    extras.stack_shim_dir = run_dir + "/python";
    extras.stacks_dir = run_dir + "/stacks";
    const std::string fr = extras.stacks_dir + "/fr";
    if (Status made = hang::make_flight_recorder_dir(fr); made.ok()) {
        extras.flight_recorder_dir = fr;
        hangs.set_flight_recorder(hang::flight_recorder_paths(fr, inherited));
    } else {
        std::fprintf(stderr, "baton launch: no Flight Recorder dumps: %s\n",
                     escaped_line(made.error().message).c_str());
    }
}

// What every attempt shares: the job's watch, its turn, its hang verdict, the ranks' extras.
struct LaunchWatch {
    run::JobWatch& watch;
    run::WatchStep& step;
    run::JobHangs& hangs;
    WorkerExtras& extras;
    bool shim_tried = false;
};

// One attempt's logs opened (`a`) and its ranks' specs; the shim installed at the first (the run
// directory exists once the first rank's logs are open).
Result<std::vector<WorkerSpec>> attempt_specs(const LaunchOptions& o, int attempt, const std::string& run_dir,
                                              LaunchWatch& lw, Attempt& a) {
    const std::string dir = run_dir + "/attempt_" + std::to_string(attempt);
    std::vector<WorkerSpec> specs;
    for (int lr = 0; lr < o.topology.nproc_per_node; ++lr) {
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
        if (!lw.shim_tried) {
            lw.shim_tried = true;
            install_rank_shim(run_dir, lw.extras, lw.hangs);
        }
        WorkerExtras x = lw.extras;
        x.error_file = rank_dir + "/error.json";
        x.nccl_debug_file = rank_dir + "/nccl.%h.%p.log";
        a.error_files.push_back(x.error_file);
        specs.push_back({o.argv, worker_environment(o.topology, lr, attempt, x, inherited)});
    }
    return specs;
}

// Watches one attempt's ranks until all exited (or stayed stuck after SIGKILL): their output, the
// hook's events, samples; the first failure, a stop signal or a hang verdict ends the others. Returns
// the first rank that failed; the processes SIGKILLed are added to `killed`.
std::optional<RankFailure> watch_attempt(const LaunchOptions& o, int attempt, WorkerGroup& group, Attempt& a,
                                         LaunchWatch& lw, LaunchResult& result, int& killed) {
    std::optional<RankFailure> failure;
    os::TreeEnd stopping(group.tree(false), o.last_wait_seconds);
    while (!group.all_exited()) {
        const double now = monotonic_seconds();
        lw.step.take_events();
        read_outputs(group, a, lw.step);
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
            // The others cannot finish without it (their collectives would wait forever).
            if (!result.stop_signal) stopping.begin(now, o.grace_seconds);
        }
        if (const int sig = run::take_stop_signal()) {
            result.stop_signal = sig;
            stopping.begin(now, o.grace_seconds, sig);
        }
        if (!stopping.ending() && !lw.extras.stacks_dir.empty() &&
            lw.hangs.turn(lw.watch, [&] { return probed_ranks(group, o.topology); })) {
            // on_hang = "stop": the verdict is the root cause; the ranks go as on a failure.
            result.stopped_on_hang = true;
            stopping.begin(monotonic_seconds(), o.grace_seconds);
        }
        if (stopping.step(now) == os::TreeEnd::Phase::stuck) {
            result.stuck = group.left();
            break;
        }
        lw.step.sample(now);
        lw.step.speak(now);
        wait_for_output(group, lw.step.wait_seconds());
    }
    killed += stopping.killed();
    return failure;
}

// The failed rank's last stderr lines, its error record, and the first NCCL error line of any rank.
void complete_failure(RankFailure& f, const Attempt& a, const LaunchTopology& t) {
    const auto i = static_cast<std::size_t>(f.local_rank);
    f.stderr_tail.assign(a.err[i].tail().begin(), a.err[i].tail().end());
    f.stderr_log = a.err[i].log_path();
    if (access(a.error_files[i].c_str(), R_OK) == 0) f.error_file = a.error_files[i];
    for (std::size_t r = 0; r < a.err.size(); ++r)
        for (const RankStream* s : {&a.err[r], &a.out[r]})
            if (const auto& m = s->first_nccl_error(); m && (!f.nccl || m->unix_ms < f.nccl->at_unix_ms))
                f.nccl = RankFailure::NcclLine{t.global_rank(static_cast<int>(r)), m->text, s->log_path(), m->unix_ms};
}

}  // namespace

Result<LaunchResult> run_launch(const LaunchOptions& o) {
    LaunchResult result;
    os::become_subreaper();
    run::catch_stop_signals();
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
    extras.owner = store::owner_token(store::current_owner());
    result.run_dir = o.log_dir + "/" + o.topology.run_id;

    run::JobWatchOptions wo = run::local_job_options(o.name, o.argv, o.thresholds, o.db_path, o.recording);
    if (!extras.gpus.empty()) {  // the ranks' GPUs together, as bound
        std::string all;
        for (const std::string& g : extras.gpus) all += (all.empty() ? "" : ",") + g;
        wo.cuda_visible_devices = all;
    }
    wo.memory_dir = extras.memory_dir;
    run::JobWatch watch(std::move(wo), std::vector<pid_t>{});
    run::WatchStep::Options so;
    so.sampler = o.sampler;
    so.interval_seconds = o.interval_seconds;
    so.window_seconds = o.thresholds.window_seconds;
    so.quiet = o.quiet;
    run::WatchStep step(watch, events ? &*events : nullptr, std::move(so));
    run::JobHangs hangs(o.hang, o.stop_on_hang, "baton launch", result.run_dir + "/stacks");
    LaunchWatch lw{watch, step, hangs, extras};
    int killed = 0;
    const double started = monotonic_seconds();

    for (int attempt = 0;; ++attempt) {
        result.attempts = attempt + 1;
        Attempt a;
        Result<std::vector<WorkerSpec>> specs = attempt_specs(o, attempt, result.run_dir, lw, a);
        if (!specs.ok()) return specs.error();
        Result<WorkerGroup> started_group = WorkerGroup::start(*specs);
        if (!started_group.ok()) return started_group.error();
        WorkerGroup group = std::move(*started_group);
        std::vector<pid_t> pids;
        for (const Worker& w : group.workers()) pids.push_back(w.pid);
        watch.set_roots(pids);
        hangs.restart();  // this attempt's ranks
        std::optional<RankFailure> failure = watch_attempt(o, attempt, group, a, lw, result, killed);
        // What the ranks wrote last (a traceback) may still be in the pipes; a pipe a leftover
        // child still holds open is not waited for long.
        for (int i = 0; i < 100 && read_outputs(group, a, step); ++i) sleep_seconds(0.002);
        step.take_events();
        // DataLoader workers and other leftovers of the ranks end with the attempt.
        if (result.stuck.empty()) {
            const TeardownReport left = group.end(std::min(o.grace_seconds, 2.0), o.last_wait_seconds);
            killed += left.killed;
            result.stuck = left.stuck;
        }
        read_outputs(group, a, step);
        for (RankStream& s : a.out) s.finish();
        for (RankStream& s : a.err) s.finish();
        if (failure) complete_failure(*failure, a, o.topology);
        result.failure = failure;
        result.hang = hangs.last_verdict();
        if (failure && !result.stop_signal && !result.stopped_on_hang && result.stuck.empty() &&
            attempt < o.topology.max_restarts) {
            std::fputs(printable_text(root_cause_text(*failure)).c_str(), stderr);
            std::fprintf(stderr, "baton launch: restarting the %d local rank(s): attempt %d of %d\n",
                         o.topology.nproc_per_node, attempt + 1, o.topology.max_restarts);
            continue;
        }
        break;
    }
    step.speak_rest();
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
