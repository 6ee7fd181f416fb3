// The queue's scheduler: which queued jobs start now, on which GPUs and CPUs, and why each of the
// others waits. A pure function of the jobs and of the machine as the agent sees it, so that the
// rules are tested on their own (tests/queue/scheduler_test.cpp) and the agent only gathers its
// inputs, records the starts in the store and verifies them against NVML before exec.
//
// The rules (docs/queue.md says them for users):
//   - Order: priority (higher first), then submission (lower id first).
//   - `after`: a job waits until every job it names has ended; with `after_ok`, until each has
//     succeeded (state done), and one that ended otherwise makes it unsatisfiable.
//   - A GPU is free for an exclusive job when no job holds it, NVML shows no compute process the
//     queue did not start, and its used memory is under `free_memory_percent` of its total.
//   - A sharing job (`share`, with a known per-GPU memory) goes on a GPU whose holders all share
//     and whose memory keeps `share_margin_percent` free once every holder's reservation, or what
//     the GPU really uses if that is more, and its own are counted; the fullest such GPU first.
//   - Backfill: the first job in order that is eligible but does not fit becomes the head; the
//     resources it could take now (free GPUs up to its count, CPUs, memory) are reserved for it, and
//     later jobs start only on what is left, so none of them can delay it. A job that could never
//     fit on this machine (more GPUs or CPUs than it has) reserves nothing.
//   - Jobs without GPUs never wait for NVML: when the GPUs cannot be read, only GPU jobs wait.
//   - Parallel limits: a job whose array (max_parallel) or group (group_parallel) already has its
//     limit of jobs starting or running waits, and reserves nothing: later jobs may start.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "store/job_state.hpp"

namespace baton::queue {

// JobState, state_name(), state_from_name(), is_final(): store/job_state.hpp (the store keeps them).

// What a job asks for.
struct Resources {
    unsigned gpus = 0;                              // how many, when gpu_uuids is empty
    std::vector<std::string> gpu_uuids;             // exactly these GPUs
    std::optional<std::uint64_t> gpu_memory_bytes;  // per GPU: declared, or the peak of earlier runs
    bool share = false;                             // may share a GPU (needs gpu_memory_bytes)
    unsigned cpus = 0;                              // CPUs pinned to it; 0: none reserved, not pinned
    std::uint64_t memory_bytes = 0;                 // host memory reserved; 0: none
};
// How many GPUs it asks for: the named ones, else the count.
inline unsigned gpus_asked(const Resources& r) {
    return r.gpu_uuids.empty() ? r.gpus : static_cast<unsigned>(r.gpu_uuids.size());
}

struct QueueJob {
    std::int64_t id = 0;
    store::JobState state = store::JobState::queued;
    int priority = 0;
    Resources want;
    std::vector<std::int64_t> after;            // jobs that must end first
    bool after_ok = false;                      // ... and succeed
    std::optional<std::int64_t> not_before_ms;  // --at / --delay: not before this (Unix ms)
    std::optional<std::int64_t> array_id;       // an array's element (baton submit --array) ...
    unsigned max_parallel = 0;                  // ... of which at most this many hold resources at once (0: any)
    std::string group;                          // baton group: its parallel limit is the pool's group_parallel
    // While starting or running: what it was given (GPU UUIDs, CPU numbers).
    std::vector<std::string> gpus_held;
    std::vector<unsigned> cpus_held;
};

// A process on a GPU that the queue did not start.
struct ForeignProcess {
    std::uint32_t pid = 0;
    std::string user;
};

struct PoolGpu {
    std::string uuid;
    unsigned index = 0;  // as nvidia-smi numbers it (PCI bus order)
    std::uint64_t memory_total_bytes = 0, memory_used_bytes = 0;
    std::vector<ForeignProcess> foreign;  // compute processes not of the queue
    std::vector<unsigned> local_cpus;     // the CPUs of its NUMA node, when known
    unsigned preference = 0;              // [queue] prefer: lower is given first (then by index)
};

// The machine the queue may use.
struct Pool {
    bool gpus_known = true;    // false: NVML missing or not answering
    std::string gpus_problem;  // why, for the waiting reason
    // Why this machine can have no GPU at all for the queue ("no NVIDIA driver: ...", GPU sampling
    // disabled), "" otherwise: a job asking for GPUs is refused, not left to wait for ever.
    std::string no_gpus;
    // false: the pool is not a machine's (a client's check before any agent is asked): its CPUs and
    // memory are unknown, and only what no machine could run is refused.
    bool machine_known = true;
    std::vector<PoolGpu> gpus;
    std::vector<unsigned> cpus;        // the CPUs it may pin jobs to
    std::uint64_t memory_bytes = 0;    // host memory it may reserve
    double free_memory_percent = 5;    // [queue] free_memory_percent
    double share_margin_percent = 10;  // memory a shared GPU keeps free
    // baton group: at most this many of a group's jobs hold resources at once (a group not here
    // has no limit).
    std::map<std::string, unsigned> group_parallel;
};

struct Start {
    std::int64_t job = 0;
    std::vector<std::string> gpus;  // UUIDs, in index order
    std::vector<unsigned> cpus;     // sorted
};

struct Plan {
    std::vector<Start> starts;                    // in the order they were decided
    std::map<std::int64_t, std::string> waiting;  // every queued job that does not start: why
    std::map<std::int64_t, std::string> never;    // queued jobs that can never run: why (also in waiting)
    std::optional<std::int64_t> head;             // the job whose resources are reserved
};

// Why `want` can never be met on this pool, even empty (more GPUs, CPUs or memory than it has, a
// GPU that is not in it), or "".
std::string never_fits(const Resources& want, const Pool& pool);

// Decides. `jobs` holds every job the rules look at: the queued ones, those holding resources
// (starting, running) and those `after` names; held and final ones are otherwise ignored.
// A job whose start is delayed (not_before_ms after `now_ms`) waits, saying until when, and
// reserves nothing meanwhile.
Plan plan(const std::vector<QueueJob>& jobs, const Pool& pool, std::int64_t now_ms = 0);

}  // namespace baton::queue
