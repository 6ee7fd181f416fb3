#include "run/child.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "core/clock.hpp"

namespace baton::run {

void become_subreaper() {
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

Error exec_failure(const std::string& program, int err) {
    return make_error(err == ENOENT ? ErrorCode::not_found : ErrorCode::not_executable,
                      "cannot run " + program + ": " + std::strerror(err));
}

Result<Child> Child::start(const std::vector<std::string>& argv, const ChildStart& how) {
    if (argv.empty()) return make_error("no command to run");
    int err_read = -1, err_write = -1;
    const bool redirected = how.output_fd >= 0;
    if (how.capture_stderr) {
        if (!redirected && isatty(STDERR_FILENO)) {
            // A pseudo-terminal with the real one's settings and size: colours and progress bars
            // that check isatty(2) behave as without baton.
            termios tio{};
            winsize ws{};
            const bool have_tio = tcgetattr(STDERR_FILENO, &tio) == 0;
            const bool have_ws = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0;
            if (openpty(&err_read, &err_write, nullptr, have_tio ? &tio : nullptr, have_ws ? &ws : nullptr) != 0)
                err_read = err_write = -1;
        }
        if (err_read < 0) {
            int p[2];
            if (pipe2(p, O_CLOEXEC) != 0) return make_error(std::string("pipe: ") + std::strerror(errno));
            err_read = p[0];
            err_write = p[1];
        }
        fcntl(err_read, F_SETFD, FD_CLOEXEC);
        fcntl(err_write, F_SETFD, FD_CLOEXEC);
    }
    int report[2];  // exec failures travel back through this pipe (closed on a successful exec)
    if (pipe2(report, O_CLOEXEC) != 0) return make_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t parent = getpid();
    const bool terminal = !redirected && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    const pid_t pid = fork();
    if (pid < 0) return make_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        // Dies with baton, even when baton is killed with SIGKILL; the check closes the race
        // where baton died before the prctl.
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent) _exit(127);
        if (terminal) {
            std::signal(SIGTTOU, SIG_IGN);
            tcsetpgrp(STDIN_FILENO, getpgrp());
        }
        // Back to the defaults baton changed for itself.
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGTTOU, SIGQUIT, SIGCHLD}) std::signal(sig, SIG_DFL);
        if (err_write >= 0) dup2(err_write, STDERR_FILENO);  // dup2 clears close-on-exec on fd 2
        if (redirected) {
            dup2(how.output_fd, STDOUT_FILENO);
            if (const int null = open("/dev/null", O_RDONLY | O_CLOEXEC); null >= 0) dup2(null, STDIN_FILENO);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        const int err = errno;
        (void)!write(report[1], &err, sizeof err);
        _exit(127);
    }
    close(report[1]);
    if (err_write >= 0) close(err_write);
    if (err_read >= 0) fcntl(err_read, F_SETFL, fcntl(err_read, F_GETFL) | O_NONBLOCK);
    setpgid(pid, pid);  // both sides set it: no race with signals sent right after fork
    int err = 0;
    ssize_t n;
    while ((n = read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {
    }
    close(report[0]);
    if (n == static_cast<ssize_t>(sizeof err)) {
        waitpid(pid, nullptr, 0);
        if (err_read >= 0) close(err_read);
        return exec_failure(argv[0], err);
    }
    Child c;
    c.pid_ = pid;
    c.gave_terminal_ = terminal;
    c.stderr_fd_ = err_read;
    return c;
}

Child::Child(Child&& o) noexcept
    : pid_(o.pid_),
      exited_(o.exited_),
      status_(o.status_),
      signal_(o.signal_),
      gave_terminal_(o.gave_terminal_),
      stderr_fd_(o.stderr_fd_) {
    o.pid_ = -1;
    o.gave_terminal_ = false;
    o.stderr_fd_ = -1;
}

Child::~Child() {
    if (stderr_fd_ >= 0) close(stderr_fd_);
    if (gave_terminal_) {
        // Take the terminal back for baton's own group (ignoring SIGTTOU while doing so).
        auto old = std::signal(SIGTTOU, SIG_IGN);
        tcsetpgrp(STDIN_FILENO, getpgrp());
        std::signal(SIGTTOU, old);
    }
}

void Child::signal_group(int sig) const {
    if (pid_ > 0) kill(-pid_, sig);
}

// Job control as a shell does it. The command stopped (Ctrl-Z at its terminal, a stop signal):
// its terminal goes back to baton's group and baton stops itself, so the shell that started baton
// sees its job stopped and gives the prompt back. On `fg` the shell continues baton, which hands
// the terminal to the command again and continues it (on `bg` it only continues it). Without a
// terminal there is no shell to hand back to: the command stays stopped until someone sends
// SIGCONT, and baton keeps watching.
void Child::follow_stop() {
    if (!gave_terminal_) return;
    auto old = std::signal(SIGTTOU, SIG_IGN);
    tcsetpgrp(STDIN_FILENO, getpgrp());
    std::signal(SIGTTOU, old);
    raise(SIGTSTP);  // returns when continued (at once in an orphaned process group: no shell)
    if (tcgetpgrp(STDIN_FILENO) == getpgrp()) {  // in the foreground again
        old = std::signal(SIGTTOU, SIG_IGN);
        tcsetpgrp(STDIN_FILENO, pid_);
        std::signal(SIGTTOU, old);
    }
    kill(-pid_, SIGCONT);
}

bool Child::poll_exit() {
    for (;;) {
        int st = 0;
        const pid_t r = waitpid(-1, &st, WNOHANG | WUNTRACED);
        if (r <= 0) break;
        if (r != pid_) continue;  // an orphaned descendant reparented to us
        if (WIFSTOPPED(st)) {
            follow_stop();
            continue;
        }
        exited_ = true;
        if (WIFEXITED(st)) {
            status_ = WEXITSTATUS(st);
        } else if (WIFSIGNALED(st)) {
            signal_ = WTERMSIG(st);
            status_ = 128 + signal_;
        }
    }
    return exited_;
}

// Processes whose parent is baton (the subreaper collects the tree's orphans).
std::vector<pid_t> own_children() {
    std::vector<pid_t> out;
    const std::string path = "/proc/" + std::to_string(getpid()) + "/task/" + std::to_string(getpid()) + "/children";
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return out;
    long p = 0;
    while (std::fscanf(f, "%ld", &p) == 1) out.push_back(static_cast<pid_t>(p));
    std::fclose(f);
    return out;
}

namespace {

// The children of `pid`, from every thread's /proc children list.
std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> out;
    const std::string task = "/proc/" + std::to_string(pid) + "/task";
    DIR* d = opendir(task.c_str());
    if (!d) return out;
    while (const dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        FILE* f = std::fopen((task + "/" + e->d_name + "/children").c_str(), "r");
        if (!f) continue;
        long p = 0;
        while (std::fscanf(f, "%ld", &p) == 1) out.push_back(static_cast<pid_t>(p));
        std::fclose(f);
    }
    closedir(d);
    return out;
}

}  // namespace

std::vector<pid_t> descendants_of(pid_t pid) {
    std::vector<pid_t> out = children_of(pid);
    for (std::size_t i = 0; i < out.size() && out.size() < 100000; ++i)
        for (pid_t c : children_of(out[i])) out.push_back(c);
    return out;
}

int Child::end_tree(double grace_seconds) {
    auto alive = [&] {
        poll_exit();
        bool group = pid_ > 0 && kill(-pid_, 0) == 0;
        return group || !own_children().empty();
    };
    if (!alive()) return 0;
    signal_group(SIGTERM);
    for (pid_t p : own_children()) kill(p, SIGTERM);
    const double deadline = monotonic_seconds() + grace_seconds;
    while (monotonic_seconds() < deadline) {
        if (!alive()) return 0;
        sleep_seconds(0.02);
    }
    int killed = 0;
    if (pid_ > 0 && kill(-pid_, SIGKILL) == 0) ++killed;
    for (pid_t p : own_children())
        if (kill(p, SIGKILL) == 0) ++killed;
    for (int i = 0; i < 100 && alive(); ++i) sleep_seconds(0.01);
    return killed;
}

}  // namespace baton::run
