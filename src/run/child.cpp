#include "run/child.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "sample/linux/spawn.hpp"
#include "sample/linux/tree_end.hpp"

namespace baton::run {

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
    os::SpawnSpec spec;
    spec.argv = argv;
    spec.die_with_parent = true;  // even when baton is killed with SIGKILL
    spec.take_terminal = !redirected && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    if (err_write >= 0) spec.stderr_fd = err_write;
    if (redirected) {
        spec.stdout_fd = how.output_fd;
        spec.stdin_fd = os::kDevNull;
    }
    Result<pid_t> pid = os::spawn(spec);
    if (err_write >= 0) close(err_write);
    if (!pid.ok()) {
        if (err_read >= 0) close(err_read);
        return pid.error();
    }
    if (err_read >= 0) fcntl(err_read, F_SETFL, fcntl(err_read, F_GETFL) | O_NONBLOCK);
    Child c;
    c.pid_ = *pid;
    c.gave_terminal_ = spec.take_terminal;
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

int Child::end_tree(double grace_seconds) {
    // The group and what left it: the subreaper made every orphan of the tree a child of baton's.
    os::TreeEnd ending({[this](int sig) {
                            int reached = pid_ > 0 && kill(-pid_, sig) == 0 ? 1 : 0;
                            for (pid_t p : os::own_children())  // (those outside the group: once each)
                                if (getpgid(p) != pid_ && kill(p, sig) == 0) ++reached;
                            return reached;
                        },
                        [this] {
                            poll_exit();
                            return (pid_ > 0 && kill(-pid_, 0) == 0) || !os::own_children().empty();
                        }},
                       1.0);
    ending.end(grace_seconds);
    return ending.killed();
}

}  // namespace baton::run
