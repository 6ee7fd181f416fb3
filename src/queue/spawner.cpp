#include "queue/spawner.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <optional>
#include <sstream>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "core/files.hpp"
#include "core/text_parse.hpp"
#include "queue/job_shim.hpp"

namespace baton::queue {

namespace {

constexpr std::size_t kMaxDir = 4096;

struct SpawnReply {
    std::int32_t pid = 0;
    std::int32_t error = 0;  // errno of a failed fork
};

// What `ps` and /proc/PID/cmdline show for this process: `words` written over the command line
// (and, when they need more room, over the environment after it, which nothing reads once
// clearenv() dropped it), as setproctitle does. Without it every supervisor would show the agent's
// own `baton serve ...` line.
void set_command_line(const std::vector<std::string>& words) {
    const std::optional<std::string> stat = read_small_file("/proc/self/stat", 8192);
    if (!stat) return;
    const std::size_t close = stat->rfind(')');
    if (close == std::string::npos) return;
    std::istringstream in(stat->substr(close + 2));
    std::vector<std::string> f;
    for (std::string w; in >> w;) f.push_back(w);
    if (f.size() < 49) return;  // fields 48..51 (arg_start, arg_end, env_start, env_end) are f[45..48]
    const std::uintptr_t arg_start = text::parse_digits<std::uintptr_t>(f[45]).value_or(0);
    const std::uintptr_t arg_end = text::parse_digits<std::uintptr_t>(f[46]).value_or(0);
    const std::uintptr_t env_end = text::parse_digits<std::uintptr_t>(f[48]).value_or(0);
    if (!arg_start || arg_end <= arg_start || env_end < arg_end) return;
    char* area = reinterpret_cast<char*>(arg_start);
    const std::size_t args = arg_end - arg_start, all = env_end - arg_start;
    std::string text;
    for (const std::string& w : words) text += w + '\0';
    if (text.size() <= args) {
        // NUL-separated words in the arguments' own room: the kernel shows that room as it is.
        std::memcpy(area, text.data(), text.size());
        std::memset(area + text.size(), 0, args - text.size());
        return;
    }
    // Longer: one line over both areas. The kernel follows on into the environment's room when
    // the arguments' last byte is not a NUL, and stops at the first NUL.
    for (char& c : text)
        if (c == '\0') c = ' ';
    text.pop_back();
    if (text.size() + 1 > all) text.resize(all - 1);
    std::memcpy(area, text.data(), text.size());
    std::memset(area + text.size(), 0, all - text.size());
}

void close_from(int first, int keep) {
    if (keep >= first) {
        if (keep > first) ::close_range(static_cast<unsigned>(first), static_cast<unsigned>(keep - 1), 0);
        ::close_range(static_cast<unsigned>(keep + 1), ~0u, 0);
    } else {
        ::close_range(static_cast<unsigned>(first), ~0u, 0);
    }
}

// The supervisor, in the spawner's fresh child: the state an exec of `baton job-shim DIR` by the
// agent gave it, then its main.
[[noreturn]] void supervise(const std::string& dir, int go, int log) {
    ::setsid();
    go = ::fcntl(go, F_DUPFD, 10);
    log = log >= 0 ? ::fcntl(log, F_DUPFD, 10) : -1;
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
        ::dup2(null, 0);
        ::dup2(null, 1);
    }
    ::dup2(log >= 0 ? log : null, 2);
    ::dup2(go, 3);
    close_from(4, -1);
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
    const sigset_t mask = supervisor_start_mask();
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    ::clearenv();
    ::setenv("PATH", "/usr/local/bin:/usr/bin:/bin", 1);
    ::prctl(PR_SET_NAME, "baton-job-shim");
    set_command_line({"baton", "job-shim", dir});
    ::_exit(run_job_shim(dir));
}

[[noreturn]] void serve_spawns(int fd) {
    close_from(3, fd);
    ::clearenv();
    ::prctl(PR_SET_NAME, "baton-spawner");
    set_command_line({"baton", "job-spawner"});
    // Its children are reaped by the kernel: the agent follows each through a pidfd.
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sa.sa_flags = SA_NOCLDWAIT;
    ::sigaction(SIGCHLD, &sa, nullptr);
    for (;;) {
        char dir[kMaxDir + 1];
        alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
        iovec iov{dir, kMaxDir};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) ::_exit(0);  // the agent is gone
        int fds[2] = {-1, -1};
        std::size_t got = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                std::memcpy(fds, CMSG_DATA(c), std::min<std::size_t>(got, 2) * sizeof(int));
            }
        SpawnReply r;
        if (fds[0] < 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
            r.error = EINVAL;
        } else {
            const std::string path(dir, static_cast<std::size_t>(n));
            const pid_t pid = ::fork();
            if (pid == 0) {
                ::close(fd);
                supervise(path, fds[0], fds[1]);
            }
            r.pid = pid;
            r.error = pid < 0 ? errno : 0;
        }
        for (int f : fds)
            if (f >= 0) ::close(f);
        if (::send(fd, &r, sizeof r, MSG_NOSIGNAL) < 0) ::_exit(0);
    }
}

}  // namespace

Result<std::unique_ptr<Spawner>> Spawner::start() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return make_error(std::string("cannot make the job starter's socket: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int e = errno;
        ::close(sv[0]);
        ::close(sv[1]);
        return make_error(std::string("cannot fork the job starter: ") + std::strerror(e));
    }
    if (pid == 0) {
        ::close(sv[0]);
        serve_spawns(sv[1]);
    }
    ::close(sv[1]);
    return std::unique_ptr<Spawner>(new Spawner(pid, sv[0]));
}

Spawner::~Spawner() {
    if (fd_ >= 0) ::close(fd_);
}

Result<pid_t> Spawner::spawn(const std::string& dir, int go_fd, int log_fd) {
    if (fd_ < 0) return make_error("the job starter is gone");
    Result<pid_t> pid = ask(dir, go_fd, log_fd);
    if (!pid.ok() && !refused_) {
        // Gone, or an answer that did not come and could still come later, paired with the next
        // request: from here on the agent starts supervisors itself.
        ::close(fd_);
        fd_ = -1;
    }
    return pid;
}

Result<pid_t> Spawner::ask(const std::string& dir, int go_fd, int log_fd) {
    refused_ = false;
    if (dir.empty() || dir.size() > kMaxDir) {
        refused_ = true;
        return make_error("a job directory of " + std::to_string(dir.size()) + " bytes");
    }
    const int fds[2] = {go_fd, log_fd};
    const std::size_t nfds = log_fd >= 0 ? 2 : 1;
    alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
    iovec iov{const_cast<char*>(dir.data()), dir.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    ssize_t put;
    do put = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    while (put < 0 && errno == EINTR);
    if (put < 0) return make_error(std::string("the job starter is gone: ") + std::strerror(errno));
    // A fork of a small process: a stopped or stuck starter must not hold the agent for long.
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return make_error("the job starter did not answer within 5 s");
    SpawnReply r;
    ssize_t got;
    do got = ::recv(fd_, &r, sizeof r, 0);
    while (got < 0 && errno == EINTR);
    if (got != static_cast<ssize_t>(sizeof r)) return make_error("the job starter is gone");
    if (r.pid <= 0) {
        refused_ = true;  // it answered: it still serves
        return make_error(std::string("the job starter cannot fork: ") + std::strerror(r.error));
    }
    return static_cast<pid_t>(r.pid);
}

Result<StartedSupervisor> start_supervisor(Spawner* spawner, const std::string& shim_program, const std::string& dir,
                                           int go_fd, int log_fd) {
    if (spawner && spawner->serving()) {
        Result<pid_t> pid = spawner->spawn(dir, go_fd, log_fd);
        if (pid.ok()) return StartedSupervisor{*pid, false};
        if (spawner->serving()) return pid.error();  // (a refusal: fork failed there)
        std::fprintf(stderr, "baton: %s: the agent starts the jobs' supervisors itself from now on\n",
                     pid.error().message.c_str());
    }
    // Fork and exec: this process has other threads, so only async-signal-safe calls in between.
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    std::string program = shim_program, arg0 = "baton", arg1 = "job-shim", arg2 = dir;
    char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
    std::string path_env = "PATH=/usr/local/bin:/usr/bin:/bin";
    char* envp[] = {path_env.data(), nullptr};
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setsid();
        ::dup2(go_fd, 3);  // dup2 clears close-on-exec on the copy
        if (null >= 0) {
            ::dup2(null, 0);
            ::dup2(null, 1);
        }
        ::dup2(log_fd >= 0 ? log_fd : null, 2);
        const sigset_t mask = supervisor_start_mask();  // (kept across exec)
        sigprocmask(SIG_SETMASK, &mask, nullptr);
        ::execve(program.c_str(), argv, envp);
        ::_exit(127);
    }
    const int fork_errno = errno;
    if (null >= 0) ::close(null);
    if (pid < 0) return make_error(std::string("cannot fork: ") + std::strerror(fork_errno));
    return StartedSupervisor{pid, true};
}

}  // namespace baton::queue
