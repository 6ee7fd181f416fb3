// Each queued job in a cgroup of its own (cgroup v2), when the agent was given a subtree to
// manage: systemd's `Delegate=yes` (deploy/baton-queue.service). The job's cgroup gets
// `memory.max` (its --mem; no limit without one), `memory.oom.group` (an out-of-memory kill takes
// the whole job, not one of its workers) and `cpuset.cpus` (its CPUs: a hard limit where affinity is
// a default the job could change). Without a delegated subtree the jobs get CPU affinity only, and
// the agent and `baton doctor` say why.
//
// Why only a delegated subtree: any root process can write anywhere under /sys/fs/cgroup, but
// cgroups systemd did not hand over are systemd's, which moves processes and rewrites limits there.
// systemd marks a delegated cgroup with the `trusted.delegate` extended attribute (v251+) and, for a
// unit with a User=, gives it to that user; either one is taken as the hand-over.
//
// Layout under the agent's cgroup D (cgroup v2's "no processes in inner cgroups" rule): the
// agent's own processes move to D/agent, the jobs go to D/jobs/ID-ATTEMPT.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace baton::queue {

struct CgroupPlace {
    std::string dir;                       // the agent's cgroup directory (D)
    std::vector<std::string> controllers;  // of memory and cpuset, those D offers
};

// Whether this process was handed a cgroup v2 subtree for its jobs, read from `proc_root`
// (/proc/self/cgroup, /proc/self/mountinfo) without changing anything; the error says why not
// ("the agent's cgroup /user.slice/... was not delegated to it (systemd: Delegate=yes)").
Result<CgroupPlace> find_delegated_cgroup(const std::string& proc_root = "/proc");

// Makes D/agent and D/jobs, moves every process of D into D/agent and enables the controllers for
// the jobs. Call once, before the first job.
Status prepare_job_cgroups(const CgroupPlace& place);

// The job's cgroup D/jobs/NAME with its limits (`memory_bytes` 0: none; `cpus` empty: all of the
// agent's); returns its directory, which the supervisor enters before it starts the command.
Result<std::string> create_job_cgroup(const CgroupPlace& place, const std::string& name, std::uint64_t memory_bytes,
                                      const std::vector<unsigned>& cpus);
std::string job_cgroup_dir(const CgroupPlace& place, const std::string& name);

// After the job: what is left in it is killed (cgroup.kill, Linux 5.14+) and the directory
// removed; false while processes still leave it (try again later).
bool remove_job_cgroup(const std::string& dir);

// "0,2-3" style lists for cpuset.cpus.
std::string cpu_list(const std::vector<unsigned>& cpus);

// The queue's job cgroups over the functions above: where they go (none: CPU affinity only, and
// why), each attempt's cgroup made and removed, and those still emptying removed again later.
class JobCgroups {
  public:
    // With `enabled`, looks for a delegated subtree in `proc_root` and prepares it.
    static JobCgroups open(bool enabled, const std::string& proc_root = "/proc");
    bool active() const { return place_.has_value(); }
    // What the jobs get, in words: "a cgroup per job under D/jobs (memory, cpuset)" or "CPU
    // affinity only: WHY" (the agent's log, `baton doctor`).
    const std::string& status() const { return status_; }
    // Attempt `attempt` of job `id`'s cgroup (its directory), or "" when not active.
    Result<std::string> create(std::int64_t id, int attempt, std::uint64_t memory_bytes,
                               const std::vector<unsigned>& cpus);
    // After the attempt: its cgroup removed, or kept to try again in sweep().
    void drop(std::int64_t id, int attempt);
    // The cgroups still emptying, removed again (the queue calls it each second).
    void sweep();
    std::size_t emptying() const { return stale_.size(); }

  private:
    std::optional<CgroupPlace> place_;
    std::string status_;
    std::vector<std::string> stale_;
};

}  // namespace baton::queue
