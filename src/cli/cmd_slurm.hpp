// The queue's commands for jobs handed to Slurm (`baton submit --slurm`, ids `slurm:ID`): the
// sbatch script and its submission, their rows in `baton queue`, and show, logs, cancel, wait,
// hold, release and retry through scontrol, squeue, sacct and scancel (queue/slurm.hpp; users'
// side in docs/queue.md, "Handing jobs to Slurm").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/cmd_queue.hpp"
#include "queue/slurm_client.hpp"

namespace baton::cli {

// `baton submit --slurm`: `argv` the command, `cwd` the directory it runs in.
int run_submit_slurm(const QueueArgs& a, const std::vector<std::string>& argv, const std::string& cwd,
                     const std::string& config_path);

// The jobs this user handed to Slurm as `baton queue` lists them (ended ones only with `all`),
// each with "id": "slurm:ID", and why Slurm could not be asked when it could not.
queue::SlurmRows slurm_queue_rows(bool all, const std::string& config_path);

enum class SlurmOp { show, logs, cancel, wait, hold, release, retry };
int run_slurm_command(SlurmOp op, const QueueArgs& a, std::int64_t id, const std::string& config_path);

}  // namespace baton::cli
