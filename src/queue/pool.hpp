// The machine as the queue's scheduler sees it (queue/scheduler.hpp's Pool), built from a snapshot:
// which GPUs the queue may use (all of them, those [queue] gpus names, inside a Slurm allocation the
// allocation's) and in which order it gives them ([queue] prefer), what
// each uses, the compute processes on them that the queue did not start, and the CPUs of each GPU's
// NUMA node (sysfs).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/text_parse.hpp"
#include "queue/scheduler.hpp"
#include "sample/snapshot.hpp"

namespace baton::queue {

struct PoolOptions {
    std::string sys_root = "/sys";
    // The GPUs the queue may use, as indices or UUIDs (allocation_gpus()); none: every GPU.
    std::optional<std::vector<std::string>> allowed_gpus;
    // [queue] gpus: the GPUs the admin gives the queue (indices or UUIDs; empty: every GPU). Inside an
    // allocation a GPU must be in both.
    std::vector<std::string> configured_gpus;
    // [queue] prefer: the GPUs given first, in this order (PoolGpu::preference); the others after.
    std::vector<std::string> prefer;
    std::vector<unsigned> cpus;      // the CPUs it may pin jobs to (the agent's own affinity)
    std::uint64_t memory_bytes = 0;  // host memory it may reserve
    double free_memory_percent = 5;
    double share_margin_percent = 10;
};

// Inside a Slurm allocation (SLURM_JOB_ID set): its GPUs, from SLURM_STEP_GPUS, else SLURM_JOB_GPUS
// (the machine's indices), else CUDA_VISIBLE_DEVICES (indices or UUIDs). An allocation without GPUs
// gives an empty list. Outside one: none (every GPU). `env` holds the variables that are set.
std::optional<std::vector<std::string>> allocation_gpus(const std::map<std::string, std::string>& env);

// sysfs cpulists ("0-3,8"), as core/text_parse.hpp reads them.
using text::parse_cpu_list;

// The pool the scheduler decides on. `queue_pids`: the processes the queue started and their
// descendants (a GPU process among them is the queue's own, not foreign).
Pool make_pool(const Snapshot& s, const std::set<std::uint32_t>& queue_pids, const PoolOptions& o);

}  // namespace baton::queue
