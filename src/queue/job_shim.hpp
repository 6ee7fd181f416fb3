// The supervisor of one queued job: `baton job-shim DIR`, a process the agent starts for each
// attempt (docs/queue.md, "How a job runs"). It outlives the agent, so a killed and restarted
// agent finds the job still watched, or its end written down, and never starts it twice:
//   - it waits for the agent's "go" on descriptor 3, written once the store says the job runs
//     under this process; end of file instead means the agent died first: it writes "not
//     started" and exits without running anything;
//   - it stays out of the job's cgroup (an out-of-memory kill there takes the whole cgroup), and
//     reads the cgroup's OOM kills at the end;
//   - it becomes the subreaper of the job's tree, pins the CPUs, and runs the command in its own
//     process group with stdout and stderr appended to DIR/stdout and DIR/stderr (opened by the
//     supervisor, so DIR stays out of the owner's reach); when started by
//     root, the command (not the shim, which must still end the tree and write the status) takes
//     the owner's groups, gid and uid before exec;
//   - SIGTERM (with sigqueue's value the grace in milliseconds) cancels: SIGTERM to every process
//     of the tree, including those that called setsid, then SIGKILL after the grace;
//   - SIGUSR1 pauses (baton pause): SIGSTOP to every process of the tree, again until each is seen
//     stopped (a process forked meanwhile is caught); SIGUSR2 resumes them (SIGCONT). A cancel or the
//     command's end while paused continues what it signals, so SIGTERM reaches it;
//   - when the command ends, what is left of its tree gets the same, and DIR/status is written
//     (atomically) before the shim exits.
#pragma once

#include <cstdint>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace baton::queue {

// DIR/spec: what to run and as whom (written by the agent).
struct ShimSpec {
    std::int64_t job = 0;
    int attempt = 0;
    std::vector<std::string> argv;
    std::vector<std::string> env;  // NAME=value
    std::string cwd;
    std::uint32_t uid = 0, gid = 0;
    std::string user;            // for initgroups
    std::vector<unsigned> cpus;  // sched_setaffinity; empty: not pinned
    std::string cgroup;          // the job's cgroup directory: the command enters it, the shim does not ("" for none)
    double end_grace_seconds = 10;
    // Directories of DIR the job's processes write in (its stacks, Flight Recorder dumps, out-of-memory
    // captures), in order: the shim makes each (0700) and gives it to the owner before the command
    // starts. Made here, not by the agent: a directory is the costliest thing the queue's thread would
    // otherwise make per job (docs/performance.md). Each must be a plain name under DIR, or a name
    // under one made before it.
    std::vector<std::string> owner_dirs;
};

// Whether `path` may be one of ShimSpec::owner_dirs of `dir`: DIR/NAME or DIR/NAME/NAME..., names
// without "." or ".." or empty parts.
bool owner_dir_allowed(const std::string& dir, const std::string& path);

// DIR/status: how it ended (written by the shim).
struct ShimStatus {
    bool started = false;  // the command was started (false: the agent never said go, or setup failed)
    bool no_go = false;    // the agent ended before it said go: the job goes back to the queue
    int exit_status = 0;   // the shell's convention: 128 + N after signal N
    int signal = 0;
    bool cancelled = false;
    int killed_after_grace = 0;
    std::string error;  // why it could not start ("cannot enter /x: No such file or directory")
    std::int64_t end_ms = 0;
    // OOM kills in the job's cgroup (its memory.events' oom_kill) by the end: its --mem was hit.
    std::uint64_t oom_kills = 0;
};

// The signal mask a supervisor starts with: SIGUSR1 and SIGUSR2 (pause, resume) blocked, so that one
// the agent sends before the supervisor took them in hand waits for it instead of killing it.
sigset_t supervisor_start_mask();

// memory.events' oom_kill count of a cgroup directory; 0 when unreadable.
std::uint64_t cgroup_oom_kills(const std::string& cgroup_dir);

std::string spec_json(const ShimSpec& s);
Result<ShimSpec> parse_spec_json(const std::string& text);
std::string status_json(const ShimStatus& s);
Result<ShimStatus> parse_status_json(const std::string& text);

// The shim's main: returns its exit code (0 once DIR/status is written).
int run_job_shim(const std::string& dir);

}  // namespace baton::queue
