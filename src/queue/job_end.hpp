// How a queued job ended, from its supervisor's status and its run's findings: the state the
// queue records (done, failed, cancelled), the note `baton show` prints, and whether it ran out of
// memory (what `--on-oom retry` requeues). Pure, so every case is tested without a job.
#pragma once

#include <string>
#include <vector>

#include "diagnose/finding.hpp"
#include "queue/job_shim.hpp"
#include "store/job_state.hpp"

namespace baton::queue {

struct JobEnd {
    store::JobState state = store::JobState::failed;  // done, failed or cancelled
    std::string note;  // why, one line ("killed by SIGKILL; the job ran out of its --mem 64M: ...")
    bool oom = false;  // out of memory: CUDA's (cuda_oom), the kernel's (host_oom_kill) or its cgroup's
};

// `findings`: the run's (empty when the job was not watched). A cgroup that counted OOM kills makes
// the job failed and oom even when nothing was watched; a cancelled job is never oom.
JobEnd job_end(const ShimStatus& status, const std::vector<diagnose::Finding>& findings);

}  // namespace baton::queue
