// `baton submit`'s flags -> what is sent: a Submission for this machine's agent, or a SlurmSubmit
// for sbatch (--slurm). Everything that needs no agent to know is refused here, with the one-line
// error naming the flag (invalid_argument): a size that is not one, --gpus with --gpu, --gpu-mem
// auto without --name, what only this machine's queue can do asked of Slurm.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "queue/protocol.hpp"
#include "queue/slurm.hpp"

namespace baton::queue {

// The flags as typed (docs/queue.md); the CLI binds its options to these fields.
struct SubmitFlags {
    unsigned gpus = 0;
    std::string gpu, gpu_mem, mem, after, name, cwd, on_oom = "fail";
    std::string at, delay;  // a delayed start: a time, or a duration from now
    int cpus = -1;          // -1: not given (the agent's default)
    unsigned retries = 0;
    int priority = 0;
    bool share = false, hold = false;
    bool slurm = false, dry_run = false;  // hand it to Slurm; print the sbatch script only
    unsigned nodes = 0;                   // --slurm: sbatch --nodes
    std::string group;                    // --group: a group of baton group (its parallel limit)
    std::string on_end;                   // --on-end: a shell command run as the owner when it ends
    // An array: --array SPEC, or --array-file PATH whose text the caller has read into array_file_text.
    std::string array, array_file, array_file_text;
    unsigned max_parallel = 0;  // --max-parallel: at most this many of the array at once (0: no limit)
};

// For this machine's agent: `argv` the command, `cwd` where it runs (resolved), `env` the
// submitter's environment (the job gets it).
// `now_ms`: now, for --at and --delay.
Result<Submission> local_submission(const SubmitFlags& flags, const std::vector<std::string>& argv,
                                    const std::string& cwd, const std::map<std::string, std::string>& env,
                                    std::int64_t now_ms);

// For sbatch: `baton` the binary the nodes run (a cluster shares its software).
Result<SlurmSubmit> slurm_submission(const SubmitFlags& flags, const std::vector<std::string>& argv,
                                     const std::string& cwd, const std::string& baton);

}  // namespace baton::queue
