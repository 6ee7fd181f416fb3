// The agent's job starter: a small process `baton serve` forks before any of its threads start,
// which forks each job's supervisor (job_shim.hpp) on the agent's behalf and runs it without exec.
//
// Why: the agent has threads, NVML and SQLite loaded and a sampler's memory, so its own fork may
// only be followed by exec, and exec of the baton binary (dynamic loading, relocation, the page
// faults of a 100 MB file) was most of what a short job cost (docs/performance.md, the queue's
// bench). The spawner has one thread and a few MB, so its fork is cheap and the child may run the
// supervisor's code at once. A supervisor is the spawner's child, not the agent's: the agent
// follows it through a pidfd as it follows re-adopted ones, and the spawner reaps it.
//
// The spawner ends when the agent closes its end (also when the agent is killed). When it is gone
// (killed by someone), spawn() says so and the agent falls back to fork and exec of `baton job-shim`.
#pragma once

#include <memory>
#include <string>
#include <sys/types.h>

#include "core/result.hpp"

namespace baton::queue {

class Spawner {
  public:
    // Forks the spawner. Call while the process has only one thread.
    static Result<std::unique_ptr<Spawner>> start();
    ~Spawner();  // closes the agent's end: the spawner exits (its supervisors go on)
    Spawner(const Spawner&) = delete;
    Spawner& operator=(const Spawner&) = delete;

    // A supervisor for the job directory `dir`, in a session of its own, with `go_fd` as its
    // descriptor 3, /dev/null as 0 and 1, `log_fd` as 2, nothing else open, default signal
    // handling and the mask supervisor_start_mask() says, PATH its only environment, and "baton job-shim DIR" as
    // its command line. Returns its pid. After an error other than a refusal (the spawner
    // gone, or no answer within 5 s) every later call fails at once. Thread: one caller at a time.
    Result<pid_t> spawn(const std::string& dir, int go_fd, int log_fd);

    pid_t pid() const { return pid_; }
    // False once spawn() took the spawner as gone.
    bool serving() const { return fd_ >= 0; }

  private:
    Spawner(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
    Result<pid_t> ask(const std::string& dir, int go_fd, int log_fd);
    pid_t pid_;
    int fd_;                // -1 once the spawner is taken as gone
    bool refused_ = false;  // the last ask was answered with a refusal (the spawner still serves)
};

// A job's supervisor, however it can be started: through `spawner` while it serves, else (none,
// or gone: said once on stderr) forked and exec'd by this process as `shim_program job-shim DIR`
// with the same descriptors, session, signals and environment as spawn() gives.
struct StartedSupervisor {
    pid_t pid = 0;
    bool own_child = false;  // forked by this process, which must reap it
};
Result<StartedSupervisor> start_supervisor(Spawner* spawner, const std::string& shim_program, const std::string& dir,
                                           int go_fd, int log_fd);

}  // namespace baton::queue
