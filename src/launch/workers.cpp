#include "launch/workers.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "sample/linux/pid_signal.hpp"
#include "sample/linux/spawn.hpp"

extern char** environ;

namespace baton::launch {

namespace {

// The launcher's environment with `overrides` set (replacing the launcher's values), built before
// fork: the child only calls async-signal-safe functions.
std::vector<std::string> merged_environment(const std::vector<std::pair<std::string, std::string>>& overrides) {
    std::set<std::string> replaced;
    for (const auto& [k, v] : overrides) replaced.insert(k);
    std::vector<std::string> out;
    for (char** e = environ; e && *e; ++e) {
        const std::string_view entry(*e);
        const std::size_t eq = entry.find('=');
        if (eq != std::string_view::npos && replaced.count(std::string(entry.substr(0, eq)))) continue;
        out.emplace_back(entry);
    }
    for (const auto& [k, v] : overrides) out.push_back(k + "=" + v);
    return out;
}

void close_fd(int& fd) {
    if (fd >= 0) close(fd);
    fd = -1;
}

}  // namespace

Result<WorkerGroup> WorkerGroup::start(const std::vector<WorkerSpec>& specs) {
    WorkerGroup g;
    for (const WorkerSpec& spec : specs) {
        int out[2], err[2];
        if (pipe2(out, O_CLOEXEC) != 0) return make_error(std::string("pipe: ") + std::strerror(errno));
        if (pipe2(err, O_CLOEXEC) != 0) {
            close(out[0]);
            close(out[1]);
            return make_error(std::string("pipe: ") + std::strerror(errno));
        }
        os::SpawnSpec s;
        s.argv = spec.argv;
        s.env = merged_environment(spec.env);
        s.new_session = true;
        s.die_with_parent = true;  // even when the launcher is killed with SIGKILL
        // A rank does not read the terminal: several processes reading one would split its input.
        s.stdin_fd = os::kDevNull;
        s.stdout_fd = out[1];
        s.stderr_fd = err[1];
        Result<pid_t> pid = os::spawn(s);
        close(out[1]);
        close(err[1]);
        if (!pid.ok()) {
            close(out[0]);
            close(err[0]);
            g.end(0, 2);
            return pid.error();
        }
        Worker w;
        w.pid = *pid;
        w.stdout_fd = out[0];
        w.stderr_fd = err[0];
        for (int fd : {w.stdout_fd, w.stderr_fd}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        w.pidfd = os::open_pidfd(w.pid);  // -1 before Linux 5.3: polled instead
        g.workers_.push_back(w);
    }
    return g;
}

WorkerGroup::WorkerGroup(WorkerGroup&& o) noexcept : workers_(std::move(o.workers_)) {
    o.workers_.clear();
}

WorkerGroup::~WorkerGroup() {
    for (Worker& w : workers_) {
        close_fd(w.stdout_fd);
        close_fd(w.stderr_fd);
        close_fd(w.pidfd);
    }
}

std::vector<std::size_t> WorkerGroup::poll() {
    std::vector<std::size_t> ended;
    for (;;) {
        int st = 0;
        const pid_t r = waitpid(-1, &st, WNOHANG);
        if (r <= 0) break;
        for (std::size_t i = 0; i < workers_.size(); ++i) {
            Worker& w = workers_[i];
            if (w.pid != r || w.exited) continue;
            w.exited = true;
            w.exited_at = monotonic_seconds();
            close_fd(w.pidfd);
            if (WIFEXITED(st)) {
                w.exit_status = WEXITSTATUS(st);
            } else if (WIFSIGNALED(st)) {
                w.signal = WTERMSIG(st);
                w.exit_status = 128 + w.signal;
            }
            ended.push_back(i);
        }
        // Any other pid: an orphan of a worker's tree, collected by the subreaper.
    }
    return ended;
}

bool WorkerGroup::all_exited() const {
    return std::all_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.exited; });
}

int WorkerGroup::signal_tree(int sig) const {
    // Counted once per process: a worker's group, and the launcher's children outside those groups.
    std::set<pid_t> groups;
    int reached = 0;
    for (const Worker& w : workers_) {
        // The group outlives its leader: its DataLoader workers.
        if (w.pid > 0 && kill(-w.pid, sig) == 0) ++reached;
        groups.insert(w.pid);
    }
    // (once: a rank that got a SIGINT twice would take the second for a second Ctrl-C)
    for (pid_t p : os::own_children())
        if (!groups.count(getpgid(p)) && kill(p, sig) == 0) ++reached;
    return reached;
}

bool WorkerGroup::anything_left() {
    poll();
    for (const Worker& w : workers_)
        if (!w.exited || kill(-w.pid, 0) == 0) return true;
    return !os::own_children().empty();
}

os::TreeEnd::Tree WorkerGroup::tree(bool reaping) {
    return {[this](int sig) { return signal_tree(sig); },
            [this, reaping] { return reaping ? anything_left() : !all_exited(); }};
}

std::vector<StuckProcess> WorkerGroup::left() const {
    std::vector<StuckProcess> stuck;
    std::set<pid_t> seen;
    for (const Worker& w : workers_)
        if (!w.exited && seen.insert(w.pid).second) stuck.push_back(os::describe_process(w.pid));
    for (pid_t p : os::own_children())
        if (seen.insert(p).second) stuck.push_back(os::describe_process(p));
    return stuck;
}

TeardownReport WorkerGroup::end(double grace_seconds, double last_wait_seconds) {
    os::TreeEnd ending(tree(true), last_wait_seconds);
    TeardownReport report;
    if (ending.end(grace_seconds) == os::TreeEnd::Phase::stuck) report.stuck = left();
    report.killed = ending.killed();
    return report;
}

}  // namespace baton::launch
