#include "launch/workers.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "run/child.hpp"
#include "sample/linux/kept_file.hpp"
#include "sample/linux/proc_pid_stat.hpp"

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

StuckProcess describe(pid_t pid) {
    StuckProcess s;
    s.pid = pid;
    os::ReadBuffer buf;
    os::PidStat st;
    if (os::read_file("/proc/" + std::to_string(pid) + "/stat", buf) && os::parse_pid_stat(buf.view(), st)) {
        s.name = std::string(st.comm);
        s.state = st.state;
    }
    return s;
}

}  // namespace

Result<WorkerGroup> WorkerGroup::start(const std::vector<WorkerSpec>& specs) {
    WorkerGroup g;
    const pid_t parent = getpid();
    for (const WorkerSpec& spec : specs) {
        if (spec.argv.empty()) return make_error("no command to run");
        const std::vector<std::string> env = merged_environment(spec.env);
        std::vector<char*> envp, args;
        for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
        envp.push_back(nullptr);
        for (const std::string& a : spec.argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        int out[2], err[2], report[2];
        if (pipe2(out, O_CLOEXEC) != 0) return make_error(std::string("pipe: ") + std::strerror(errno));
        if (pipe2(err, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0) {
            close(out[0]);
            close(out[1]);
            return make_error(std::string("pipe: ") + std::strerror(errno));
        }
        const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        const pid_t pid = fork();
        if (pid < 0) return make_error(std::string("fork: ") + std::strerror(errno));
        if (pid == 0) {
            setsid();
            // Dies with the launcher even when it is killed with SIGKILL; the check closes the race
            // where the launcher died before the prctl.
            prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
            if (getppid() != parent) _exit(127);
            for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGTTOU, SIGQUIT, SIGCHLD}) std::signal(sig, SIG_DFL);
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, nullptr);
            // A rank does not read the terminal: several processes reading one would split its input.
            if (devnull >= 0) dup2(devnull, STDIN_FILENO);
            dup2(out[1], STDOUT_FILENO);
            dup2(err[1], STDERR_FILENO);
            execvpe(args[0], args.data(), envp.data());
            const int e = errno;
            (void)!write(report[1], &e, sizeof e);
            _exit(127);
        }
        if (devnull >= 0) close(devnull);
        close(out[1]);
        close(err[1]);
        close(report[1]);
        Worker w;
        w.pid = pid;
        w.stdout_fd = out[0];
        w.stderr_fd = err[0];
        for (int fd : {w.stdout_fd, w.stderr_fd}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        w.pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // -1 before Linux 5.3: polled instead
        // (No setpgid here: a group leader cannot call setsid. The child is a session leader before
        // its exec, so before the report pipe below closes.)
        int e = 0;
        ssize_t n;
        while ((n = read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {
        }
        close(report[0]);
        g.workers_.push_back(w);
        if (n == static_cast<ssize_t>(sizeof e)) {
            g.end(0, 2);
            return run::exec_failure(spec.argv[0], e);
        }
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

void WorkerGroup::signal_all(int sig) const {
    for (const Worker& w : workers_)
        if (w.pid > 0) kill(-w.pid, sig);  // the group outlives its leader: its DataLoader workers
}

int WorkerGroup::kill_all() const {
    // Counted once per process: a worker's group, and the launcher's children outside those groups.
    std::set<pid_t> groups;
    int killed = 0;
    for (const Worker& w : workers_) {
        if (w.pid > 0 && kill(-w.pid, SIGKILL) == 0) ++killed;
        groups.insert(w.pid);
    }
    for (pid_t p : run::own_children()) {
        const pid_t group = getpgid(p);
        if (kill(p, SIGKILL) == 0 && !groups.count(group)) ++killed;
    }
    return killed;
}

bool WorkerGroup::anything_left() {
    poll();
    for (const Worker& w : workers_)
        if (!w.exited || kill(-w.pid, 0) == 0) return true;
    return !run::own_children().empty();
}

std::vector<StuckProcess> WorkerGroup::wait_gone(double seconds) {
    const double deadline = monotonic_seconds() + seconds;
    while (anything_left()) {
        if (monotonic_seconds() >= deadline) {
            std::vector<StuckProcess> stuck;
            std::set<pid_t> seen;
            for (const Worker& w : workers_)
                if (!w.exited && seen.insert(w.pid).second) stuck.push_back(describe(w.pid));
            for (pid_t p : run::own_children())
                if (seen.insert(p).second) stuck.push_back(describe(p));
            return stuck;
        }
        sleep_seconds(0.01);
    }
    return {};
}

TeardownReport WorkerGroup::end(double grace_seconds, double last_wait_seconds) {
    TeardownReport report;
    if (!anything_left()) return report;
    signal_all(SIGTERM);
    for (pid_t p : run::own_children()) kill(p, SIGTERM);
    const double deadline = monotonic_seconds() + grace_seconds;
    while (monotonic_seconds() < deadline) {
        if (!anything_left()) return report;
        sleep_seconds(0.01);
    }
    report.killed = kill_all();
    report.stuck = wait_gone(last_wait_seconds);
    return report;
}

}  // namespace baton::launch
