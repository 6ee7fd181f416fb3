// A Slurm job's names and allocation on this node, from the two places a node has them without
// Slurm's database: the environment slurmstepd gives every task (/proc/PID/environ, readable by root
// and the job's user), and `scontrol show job -o -d ID` (one line: "JobId=1234 JobName=train
// UserId=alice(1000) ... Account=ml Partition=gpu ... TimeLimit=1-00:00:00 ... Nodes=node1
// CPU_IDs=0-7 Mem=64000 GRES=gpu:2(IDX:0-1) ..."). Pure parsers, tested on recorded and hostile text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::jobs {

struct SlurmNames {
    std::string job_id, name, user, account, partition;
    std::optional<unsigned> cpus;                 // cores allocated on this node
    std::optional<std::uint64_t> memory_bytes;    // memory allocated on this node
    std::optional<std::vector<unsigned>> gpus;    // GRES GPU indices on this node (Slurm's IDX)
    std::optional<double> time_limit_seconds;     // absent: unlimited or not said
    std::optional<std::int64_t> start_time_unix;  // when it started (scontrol), local time read as such
};

// A process's environment (NUL-separated "KEY=value"): its SLURM_JOB_* variables. Empty job_id when
// it has none. Values with bytes outside printable ASCII are dropped (they become labels).
SlurmNames parse_slurm_environ(std::string_view environ);

// `scontrol show job -o -d ID`'s line for the job, on node `hostname` (its detail entry for this
// node gives the cores, memory and GPUs here; a single-node job's only entry is taken as this
// node's). Empty job_id when the text is not such a line.
SlurmNames parse_scontrol_job(std::string_view text, std::string_view hostname);

// Slurm's time formats: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS"; absent for
// "UNLIMITED", "Partition_Limit" and anything else.
std::optional<double> parse_slurm_duration(std::string_view s);

// A Slurm index list as in "IDX:0-1,3" or SLURM_JOB_GPUS "0,1,3"; absent when malformed or
// implausibly long (more than 1024 indices).
std::optional<std::vector<unsigned>> parse_slurm_index_list(std::string_view s);

}  // namespace baton::jobs
