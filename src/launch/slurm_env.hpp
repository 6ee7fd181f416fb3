// `baton launch` inside a Slurm job: the node's place and the master's address read from the
// variables srun sets, so that `srun --ntasks-per-node=1 baton launch train.py` needs no flags.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "launch/worker_env.hpp"

namespace baton::launch {

// A Slurm host list expanded as `scontrol show hostnames` does: "gpu[01-03,7],login" ->
// gpu01 gpu02 gpu03 gpu7 login; several bracket groups multiply ("a[1-2]b[1-2]" -> a1b1 a1b2 a2b1
// a2b2); a range keeps its low bound's width (zero padding). Errors: unbalanced brackets, a range
// that is not digits or runs backwards, more than `max_hosts` names.
Result<std::vector<std::string>> expand_hostlist(std::string_view list, std::size_t max_hosts = 65536);

struct SlurmPlacement {
    std::string job_id;
    int nnodes = 1;
    int node_rank = 0;
    std::string master_addr;  // the first host of the job's node list
    int master_port = 0;      // derived from the job id: every node computes the same
};

// nullopt outside a Slurm job (no SLURM_JOB_ID or no node list). Errors: variables that are
// malformed or contradict each other, and more tasks than nodes (one launcher per node is the
// only layout that gives each rank one process: `srun --ntasks-per-node=1 baton launch ...`).
Result<std::optional<SlurmPlacement>> slurm_placement(const EnvLookup& env);

// The master port of a Slurm job: 20000 + job id modulo 20000 (the same on every node, and two
// jobs sharing a node rarely collide).
int slurm_master_port(std::string_view job_id);

}  // namespace baton::launch
