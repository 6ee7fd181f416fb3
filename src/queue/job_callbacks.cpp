#include "queue/job_callbacks.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "sample/linux/spawn.hpp"

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
    if (::geteuid() != 0 && owner.uid != ::geteuid())
        return make_error("cannot run " + what + " as " + owner.name + ": the agent is not root");
    os::SpawnSpec how;
    how.argv = {"/bin/sh", "-c", command};
    how.env = env;
    how.stdin_fd = os::kDevNull;
    if (log_fd >= 0) how.stdout_fd = how.stderr_fd = log_fd;
    if (::geteuid() == 0 && owner.uid != 0) how.identity = os::identity_of(owner.name, owner.uid, owner.gid);
    how.cwd = cwd.empty() ? "/" : cwd;
    how.cwd_or_root = true;              // the job's directory may be gone by now
    Result<pid_t> pid = os::spawn(how);  // its own process group: the timeout ends all it started
    if (!pid.ok()) return pid.error().context("cannot start " + what);
    // The tree: the callback's process group, and every descendant that left it (setsid, its own group).
    os::TreeEnd ending({[p = *pid](int sig) { return os::signal_tree(p, p, sig); },
                        [] { return true; }},  // (check() reaps it and forgets it)
                       3600);
    running_.push_back({*pid, monotonic_seconds() + timeout, std::move(what), timeout, std::move(ending)});
    return Ok{};
}

std::size_t JobCallbacks::check(double now) {
    for (auto it = running_.begin(); it != running_.end();) {
        int status = 0;
        const pid_t w = ::waitpid(it->pid, &status, WNOHANG);
        if (w == it->pid || (w < 0 && errno == ECHILD)) {
            if (w == it->pid && WIFEXITED(status) && WEXITSTATUS(status) != 0 && !it->ending.ending())
                std::fprintf(stderr, "baton: %s exited %d\n", escaped_line(it->what).c_str(), WEXITSTATUS(status));
            it = running_.erase(it);
            continue;
        }
        if (now >= it->deadline && !it->ending.ending()) {
            std::fprintf(stderr, "baton: %s still ran after %s (its timeout, [queue] on_end_timeout): killed\n",
                         escaped_line(it->what).c_str(), fmt::format("{:g}s", it->timeout).c_str());
            it->ending.begin(now, 2);
        }
        it->ending.step(now);
        ++it;
    }
    return running_.size();
}

}  // namespace baton::queue
