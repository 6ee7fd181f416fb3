// The parts of starting one queued job that decide rather than act: whether its GPUs are still
// free, whose it is (the passwd entry now), the names CUDA_VISIBLE_DEVICES gives its GPUs, the login variables of its
// owner over the submitter's environment, its directories with the modes that keep them the agent's. The queue server's
// launch() runs them in order, then hands the job to its supervisor.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "queue/scheduler.hpp"
#include "sample/snapshot.hpp"

namespace baton::queue {

struct JobOwner {
    uid_t uid = 0;
    gid_t gid = 0;
    std::string name, home, shell;
};

// The passwd entry of `uid` as it is now; not_found when there is none (a user removed since
// the submission).
Result<JobOwner> job_owner(std::uint32_t uid);

// The job's GPUs (UUIDs, or "index:N" where NVML gave no UUID) as CUDA_VISIBLE_DEVICES names
// them: indices in baton's numbering of `gpus`, or the UUIDs themselves with `by_uuid` (inside a
// Slurm allocation CUDA may number the GPUs it sees from 0).
std::vector<std::string> visible_devices(const std::vector<std::string>& held, const std::vector<PoolGpu>& gpus,
                                         bool by_uuid);

// The check just before a GPU job starts, on the GPUs as NVML reads them now: a compute process
// that none of the queue's jobs started (`queue_pids`: their processes, by the pid NVML gives or by
// this namespace's) on one of the job's GPUs `uuids` (UUIDs or "index:N"). Its reason, which
// sends the job back to the queue ("GPU1 got a process the queue did not start (pid 4242) just
// before the start"), or nothing.
std::optional<std::string> foreign_gpu_process(const std::vector<std::string>& uuids, const std::vector<GpuInfo>& gpus,
                                               const std::set<std::uint32_t>& queue_pids);

// HOME, USER, LOGNAME and SHELL of `owner` over `env` (KEY=VALUE words), as a login would set them.
void set_login_variables(std::vector<std::string>& env, const JobOwner& owner);

// The job's directory and its attempt's, created and kept the agent's: a root agent writes the
// spec and its supervisor the logs and the status there, and a directory the job's owner could
// write to would let them plant a link that turns one of those writes into root's write anywhere.
// Traversable, not listable (0711 for root, else 0700), so the job's processes reach the hook's
// socket; the owner reads the logs through the agent.
Status make_attempt_dirs(const std::string& job_dir, const std::string& attempt_dir);

}  // namespace baton::queue
