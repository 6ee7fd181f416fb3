// Starting a process the way baton starts every process it supervises (`baton run`'s command, a
// rank of `baton launch`, a queued job, a queue callback). Between fork and exec the child makes
// only async-signal-safe calls, in this order: its own process group or session; a parent-death
// signal; the cgroup it belongs to; the terminal; the signal dispositions and mask; its standard
// descriptors; its identity; its directory; exec. A failure after the fork travels back through a
// pipe (closed by a successful exec), so the caller gets an Error, not a process that exits 127.
#pragma once

#include <csignal>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "core/result.hpp"

namespace baton::os {

// "cannot run PROGRAM: REASON" for exec's errno `err`: not_found for ENOENT (a shell's 127),
// not_executable otherwise (126).
Error exec_failure(const std::string& program, int err);

// Whose the process becomes (the queue's jobs and callbacks run as their owner). Made before the
// fork: looking a user's groups up reads /etc/group, which a forked child of a threaded process
// must not do.
struct Identity {
    std::string user;  // for messages
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  // the supplementary groups, `gid` among them
};

// `user`'s identity with its supplementary groups (getgrouplist; `gid` alone when it has none).
Identity identity_of(const std::string& user, uid_t uid, gid_t gid);

// A standard descriptor of the child: this process's (kInherit), /dev/null (kDevNull), or a
// descriptor of the caller's.
inline constexpr int kInherit = -1;
inline constexpr int kDevNull = -2;

struct SpawnSpec {
    std::vector<std::string> argv;                // argv[0] looked up on this process's PATH
    std::optional<std::vector<std::string>> env;  // "KEY=VALUE" each: the whole environment; none: ours
    bool new_session = false;                     // setsid(); otherwise a process group of its own
    bool die_with_parent = false;                 // SIGKILL when this process dies, even by SIGKILL
    bool take_terminal = false;                   // the foreground of our terminal (a `baton run` at a shell)
    int stdin_fd = kInherit, stdout_fd = kInherit, stderr_fd = kInherit;
    // Joined first (its pid written to this cgroup.procs), so all it starts is the cgroup's. One that
    // cannot be joined is said on the child's stderr and it runs on.
    std::string cgroup_procs;
    std::optional<Identity> identity;  // its groups, gid and uid, for good (root only)
    std::string cwd;                   // empty: ours
    bool cwd_or_root = false;          // a `cwd` that cannot be entered: / instead of a failure
    // The child's signal mask; none: nothing blocked. The dispositions baton changes for itself
    // (SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGTTOU, SIGQUIT, SIGCHLD) go back to the defaults.
    std::optional<sigset_t> mask;
};

// Starts the process and returns its pid, once it has exec'd. Errors, each with the child reaped:
// the program is not found (not_found: a shell's 127), or it cannot be executed, its directory
// entered or its identity taken (not_executable: a shell's 126, "cannot run PROGRAM: ...",
// "cannot enter DIR: ...", "cannot become USER (uid N): ..."); nothing was started when a pipe or the
// fork failed (failed).
Result<pid_t> spawn(const SpawnSpec& spec);

// The status a shell would have given for spawn()'s error: 127 (not_found), 126 (not_executable), or
// 0 when no process was started.
int spawn_failure_status(const Error& error);

}  // namespace baton::os
