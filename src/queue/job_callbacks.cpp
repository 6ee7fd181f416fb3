#include "queue/job_callbacks.hpp"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "run/child.hpp"

namespace baton::queue {

std::string callback_command(const std::string& command, const EndedJob& end) {
    const std::pair<const char*, std::string> words[] = {
        {"{id}", std::to_string(end.id)},
        {"{name}", end.name},
        {"{status}", end.status},
        {"{exit}", end.exit_status ? std::to_string(*end.exit_status) : std::string()},
        {"{user}", end.user},
    };
    std::string out;
    for (std::size_t at = 0; at < command.size();) {
        bool replaced = false;
        for (const auto& [word, value] : words)
            if (command.compare(at, std::strlen(word), word) == 0) {
                out += sh_quoted(value);
                at += std::strlen(word);
                replaced = true;
                break;
            }
        if (!replaced) out += command[at++];
    }
    return out;
}

std::vector<std::string> callback_environment(const EndedJob& end, const JobOwner& owner) {
    std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"};
    set_login_variables(env, owner);
    env.push_back("BATON_JOB_ID=" + std::to_string(end.id));
    env.push_back("BATON_JOB_NAME=" + end.name);
    env.push_back("BATON_JOB_STATUS=" + end.status);
    env.push_back("BATON_JOB_EXIT=" + (end.exit_status ? std::to_string(*end.exit_status) : std::string()));
    return env;
}

JobCallbacks::~JobCallbacks() = default;

Status JobCallbacks::start(const std::string& command, const JobOwner& owner, const std::vector<std::string>& env,
                           const std::string& cwd, int log_fd, double timeout, std::string what) {
    // Everything the child needs is made before the fork: after it, in a process with threads, only
    // async-signal-safe calls may be made.
    const bool become = ::geteuid() == 0 && owner.uid != 0;
    if (::geteuid() != 0 && owner.uid != ::geteuid())
        return make_error("cannot run " + what + " as " + owner.name + ": the agent is not root");
    std::vector<gid_t> groups(64);
    if (become) {
        int n = static_cast<int>(groups.size());
        if (::getgrouplist(owner.name.c_str(), owner.gid, groups.data(), &n) < 0) {
            groups.resize(static_cast<std::size_t>(n));
            if (::getgrouplist(owner.name.c_str(), owner.gid, groups.data(), &n) < 0) n = 0;
        }
        groups.resize(static_cast<std::size_t>(std::max(n, 0)));
        if (groups.empty()) groups.push_back(owner.gid);
    }
    const std::string shell = "/bin/sh", dir = cwd.empty() ? "/" : cwd;
    std::vector<char*> argv = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>(command.c_str()),
                               nullptr};
    std::vector<char*> envp;
    for (const std::string& kv : env) envp.push_back(const_cast<char*>(kv.c_str()));
    envp.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return make_error(std::string("cannot start ") + what + ": " + std::strerror(errno));
    if (pid == 0) {
        ::setpgid(0, 0);  // its own group: the timeout kills all it started
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int s : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD}) ::signal(s, SIG_DFL);
        const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null >= 0) ::dup2(null, 0);
        if (log_fd >= 0) {
            ::dup2(log_fd, 1);
            ::dup2(log_fd, 2);
        }
        if (become &&
            (::setgroups(groups.size(), groups.data()) != 0 || ::setgid(owner.gid) != 0 || ::setuid(owner.uid) != 0))
            ::_exit(126);
        if (::chdir(dir.c_str()) != 0 && ::chdir("/") != 0) ::_exit(126);
        ::execve(shell.c_str(), argv.data(), envp.data());
        ::_exit(127);
    }
    running_.push_back({pid, monotonic_seconds() + timeout, false, std::move(what), timeout});
    return Ok{};
}

namespace {

// The callback's process group, and every descendant that left it (setsid, its own group).
void signal_tree(pid_t pid, int sig) {
    const std::vector<pid_t> tree = run::descendants_of(pid);
    ::kill(-pid, sig);
    for (pid_t p : tree) ::kill(p, sig);
}

}  // namespace

std::size_t JobCallbacks::check(double now) {
    for (auto it = running_.begin(); it != running_.end();) {
        int status = 0;
        const pid_t w = ::waitpid(it->pid, &status, WNOHANG);
        if (w == it->pid || (w < 0 && errno == ECHILD)) {
            if (w == it->pid && WIFEXITED(status) && WEXITSTATUS(status) != 0 && !it->term_sent)
                std::fprintf(stderr, "baton: %s exited %d\n", escaped_line(it->what).c_str(), WEXITSTATUS(status));
            it = running_.erase(it);
            continue;
        }
        if (now >= it->deadline) {
            if (!it->term_sent) {
                std::fprintf(stderr, "baton: %s still ran after %s (its timeout, [queue] on_end_timeout): killed\n",
                             escaped_line(it->what).c_str(), fmt::format("{:g}s", it->timeout).c_str());
                signal_tree(it->pid, SIGTERM);
                it->term_sent = true;
                it->deadline = now + 2;
            } else {
                signal_tree(it->pid, SIGKILL);
                it->deadline = now + 3600;  // (reaped at a later check)
            }
        }
        ++it;
    }
    return running_.size();
}

}  // namespace baton::queue
