// What `baton tune` tries, from what the baseline's trial showed: the DataLoader when the step waits for
// data, the intra-op threads when the CPUs are oversubscribed (fewer) or idle (more), cuDNN's autotuner, TF32 and
// bfloat16 where the GPU has them, the allocator's expandable segments near the memory's end, and a larger batch only
// when the user allows it. Each candidate says why. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tune/settings.hpp"

namespace baton::tune {

// The training DataLoader as the hook saw it made (python/baton/_tune.py's "loader" event).
struct LoaderFacts {
    int num_workers = 0;
    bool pin_memory = false, persistent_workers = false;
    std::optional<int> prefetch_factor;
    std::optional<int> batch_size;        // none with a batch_sampler, or batch_size=None
    std::optional<std::int64_t> batches;  // len(loader) when it has one: batches per epoch
};

// The training process as the hook saw it (its "process" event).
struct ProcessFacts {
    int torch_threads = 1;
    bool cuda = false;      // the script's tensors are on a CUDA device
    int compute_major = 0;  // the GPU's compute capability (8: Ampere, TF32 and bfloat16)
    bool cudnn_benchmark = false, tf32 = false;
};

struct BaselineFacts {
    std::optional<LoaderFacts> loader;
    std::optional<ProcessFacts> process;
    double data_wait_share = 0;        // of the step time, measured
    unsigned cpus = 1;                 // the CPUs the job may use
    double cpu_busy_share = 0;         // of those CPUs, over the trial
    double gpu_memory_peak_share = 0;  // of the device's memory
    std::uint64_t alloc_retries = 0;   // the CUDA allocator's, over the trial
    std::int64_t trial_steps = 0;      // steps a trial measures
    bool allow_batch_size = false;
};

struct Candidate {
    Settings settings;
    std::string reason;
};

inline constexpr double kDataWaitWorthTuning = 0.10;  // of the step: below it the loader is not the matter
inline constexpr double kCpusIdle = 0.75;             // the job's CPU use below it: a quarter of its CPUs or more idle

std::vector<Candidate> candidates(const BaselineFacts& b, std::size_t most = 5);

}  // namespace baton::tune
