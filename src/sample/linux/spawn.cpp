#include "sample/linux/spawn.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

namespace baton::os {

namespace {

// What the child reports when it gives up before its exec: the step and its errno.
enum class Step : int { exec = 1, cwd = 2, identity = 3 };

// Writes all of `text` to fd 2 (async-signal-safe).
void say(const char* text) {
    (void)!::write(STDERR_FILENO, text, std::strlen(text));
}

// The descriptor `want` of the child from `fd`: kInherit leaves it, kDevNull is `null`.
void place(int fd, int want, int null) {
    if (want == kInherit) return;
    const int from = want == kDevNull ? null : want;
    if (from >= 0) ::dup2(from, fd);  // (dup2 clears close-on-exec on the copy)
}

// The child's side, after the fork: only async-signal-safe calls. Returns only on failure.
[[noreturn]] void become(const SpawnSpec& s, pid_t parent, int report, int null, char* const* argv, char* const* envp) {
    if (s.new_session) {
        ::setsid();
    } else {
        ::setpgid(0, 0);
    }
    if (s.die_with_parent) {
        // The check closes the race where the parent died before the prctl.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (::getppid() != parent) ::_exit(127);
    }
    place(STDIN_FILENO, s.stdin_fd, null);
    place(STDOUT_FILENO, s.stdout_fd, null);
    place(STDERR_FILENO, s.stderr_fd, null);
    if (!s.cgroup_procs.empty()) {
        const int fd = ::open(s.cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
        char me[24];
        const int len = std::snprintf(me, sizeof me, "%d", static_cast<int>(::getpid()));
        if (fd < 0 || ::write(fd, me, static_cast<std::size_t>(len)) != len) {
            const char* why = std::strerror(errno);
            say("baton: cannot enter the cgroup of ");
            say(s.cgroup_procs.c_str());
            say(": ");
            say(why);
            say("\n");
        }
        if (fd >= 0) ::close(fd);
    }
    if (s.take_terminal) {
        ::signal(SIGTTOU, SIG_IGN);
        ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
    }
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGTTOU, SIGQUIT, SIGCHLD}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, s.mask ? &*s.mask : &none, nullptr);
    int what[2] = {0, 0};
    // Groups, then gid, then uid: each needs root; and no way back (setuid(0) must fail after).
    if (s.identity &&
        (::setgroups(s.identity->groups.size(), s.identity->groups.data()) != 0 || ::setgid(s.identity->gid) != 0 ||
         ::setuid(s.identity->uid) != 0 || (s.identity->uid != 0 && ::setuid(0) == 0))) {
        what[0] = static_cast<int>(Step::identity);
    } else if (!s.cwd.empty() && ::chdir(s.cwd.c_str()) != 0 && !(s.cwd_or_root && ::chdir("/") == 0)) {
        what[0] = static_cast<int>(Step::cwd);
    } else {
        if (envp) {
            ::execvpe(argv[0], argv, envp);
        } else {
            ::execvp(argv[0], argv);
        }
        what[0] = static_cast<int>(Step::exec);
    }
    what[1] = errno;
    (void)!::write(report, what, sizeof what);
    ::_exit(what[0] == static_cast<int>(Step::exec) && what[1] == ENOENT ? 127 : 126);
}

}  // namespace

Error exec_failure(const std::string& program, int err) {
    return make_error(err == ENOENT ? ErrorCode::not_found : ErrorCode::not_executable,
                      "cannot run " + program + ": " + std::strerror(err));
}

Identity identity_of(const std::string& user, uid_t uid, gid_t gid) {
    Identity id{user, uid, gid, std::vector<gid_t>(64)};
    int n = static_cast<int>(id.groups.size());
    if (::getgrouplist(user.c_str(), gid, id.groups.data(), &n) < 0) {
        id.groups.resize(static_cast<std::size_t>(std::max(n, 0)));
        if (::getgrouplist(user.c_str(), gid, id.groups.data(), &n) < 0) n = 0;
    }
    id.groups.resize(static_cast<std::size_t>(std::max(n, 0)));
    if (id.groups.empty()) id.groups.push_back(gid);
    return id;
}

Result<pid_t> spawn(const SpawnSpec& s) {
    if (s.argv.empty()) return make_error("no command to run");
    // Everything the child needs is made before the fork.
    std::vector<std::string> words = s.argv, env = s.env.value_or(std::vector<std::string>{});
    std::vector<char*> argv, envp;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const bool wants_null = s.stdin_fd == kDevNull || s.stdout_fd == kDevNull || s.stderr_fd == kDevNull;
    const int null = wants_null ? ::open("/dev/null", O_RDWR | O_CLOEXEC) : -1;
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) {
        const int e = errno;
        if (null >= 0) ::close(null);
        return make_error(std::string("cannot make a pipe: ") + std::strerror(e));
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) become(s, parent, report[1], null, argv.data(), s.env ? envp.data() : nullptr);
    const int fork_errno = errno;
    ::close(report[1]);
    if (null >= 0) ::close(null);
    if (pid < 0) {
        ::close(report[0]);
        return make_error(std::string("cannot fork: ") + std::strerror(fork_errno));
    }
    // Both sides set the group: no race with a signal sent to it right after the fork. (A session
    // leader cannot be moved: the child's setsid runs before its exec, so before the report closes.)
    if (!s.new_session) ::setpgid(pid, pid);
    int what[2] = {0, 0};
    ssize_t got;
    do got = ::read(report[0], what, sizeof what);
    while (got < 0 && errno == EINTR);
    ::close(report[0]);
    if (got != static_cast<ssize_t>(sizeof what)) return pid;  // exec'd
    ::waitpid(pid, nullptr, 0);
    switch (static_cast<Step>(what[0])) {
        case Step::identity:
            return make_error(ErrorCode::not_executable, "cannot become " + s.identity->user + " (uid " +
                                                             std::to_string(s.identity->uid) +
                                                             "): " + std::strerror(what[1]));
        case Step::cwd:
            return make_error(ErrorCode::not_executable, "cannot enter " + s.cwd + ": " + std::strerror(what[1]));
        case Step::exec:
            break;
    }
    return exec_failure(s.argv.front(), what[1]);
}

int spawn_failure_status(const Error& error) {
    if (error.is(ErrorCode::not_found)) return 127;
    return error.is(ErrorCode::not_executable) ? 126 : 0;
}

}  // namespace baton::os
