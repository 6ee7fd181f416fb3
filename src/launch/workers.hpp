// The local workers of `baton launch`: each in its own session (so a signal to one rank's group
// reaches its DataLoader workers and nothing else), its stdout and stderr through pipes to the
// launcher, a parent-death signal so no worker outlives a killed launcher; the launcher is the
// subreaper of the whole tree. Teardown is os::TreeEnd's: SIGTERM to every group, a grace, SIGKILL,
// and a bounded last wait: a process stuck in the kernel (state D) is reported, not waited for.
#pragma once

#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "sample/linux/tree_end.hpp"

namespace baton::launch {

struct WorkerSpec {
    std::vector<std::string> argv;                         // argv[0] looked up on PATH
    std::vector<std::pair<std::string, std::string>> env;  // set on top of the launcher's
};

struct Worker {
    pid_t pid = -1;                      // also its session and process group
    int stdout_fd = -1, stderr_fd = -1;  // read ends, non-blocking; -1 once closed
    int pidfd = -1;                      // readable once it exited: the launcher wakes at once
    bool exited = false;
    int exit_status = 0;   // the shell's convention: the code, or 128 + signal
    int signal = 0;        // the signal that ended it, 0 when it exited
    double exited_at = 0;  // monotonic seconds
};

// A process that did not end after SIGKILL within the last wait ('D': it waits in the kernel, a
// driver or NFS).
using StuckProcess = os::TreeMember;

struct TeardownReport {
    int killed = 0;  // processes that needed SIGKILL
    std::vector<StuckProcess> stuck;
};

class WorkerGroup {
  public:
    // Starts one worker per spec, in order. When one cannot be started (its program is missing or
    // not executable), the ones already started are ended and the error names the program, with
    // os::spawn's code: not_found or not_executable.
    static Result<WorkerGroup> start(const std::vector<WorkerSpec>& specs);

    WorkerGroup(WorkerGroup&& other) noexcept;
    WorkerGroup& operator=(WorkerGroup&&) = delete;
    ~WorkerGroup();

    std::vector<Worker>& workers() { return workers_; }
    const std::vector<Worker>& workers() const { return workers_; }

    // Reaps what exited (workers, and orphans of their trees that the subreaper collected).
    // Returns the indices of the workers that exited since the last call, in the order seen.
    std::vector<std::size_t> poll();
    bool all_exited() const;

    // The workers as a tree for os::TreeEnd: every worker's process group and the launcher's other
    // children (what left a group and was orphaned). A signal's count is one per process group and
    // per other child. alive() reaps (poll()) when `reaping`; otherwise it only looks, so that the
    // caller's own poll() still sees each worker's exit.
    os::TreeEnd::Tree tree(bool reaping);

    // The end: SIGTERM to every group and to the launcher's other children, `grace_seconds`, then
    // SIGKILL, then at most `last_wait_seconds` for the processes to go.
    TeardownReport end(double grace_seconds, double last_wait_seconds);

    // What is left now: the workers not reaped and the launcher's other children.
    std::vector<StuckProcess> left() const;

  private:
    WorkerGroup() = default;
    int signal_tree(int sig) const;
    bool anything_left();
    std::vector<Worker> workers_;
};

}  // namespace baton::launch
