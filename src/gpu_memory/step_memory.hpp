// What the caching allocator's per-step figures (the hook's, python/baton/_memory.py) say before any
// out-of-memory error: a climb of the memory kept across steps (gpu_memory_leak: a tensor kept from
// each step) and the head-room the peak step leaves (gpu_memory_near_oom: whether the next larger
// batch fits). Judged per training process over its recent steps; pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/thresholds.hpp"
#include "diagnose/finding.hpp"

namespace baton::gpu_memory {

// One step of one process.
struct StepAllocation {
    std::int64_t step = 0;
    std::int64_t samples = 0;  // 0: unknown
    std::uint64_t held = 0;    // allocated at the step's end: what the steps keep
    std::uint64_t peak = 0;    // the step's peak allocation
};

// Where the process runs: its GPU's label ("GPU0", or "cuda:0" without NVML), its memory, and what
// other processes hold there.
struct StepMemoryContext {
    std::string gpu = "the GPU";
    std::optional<std::uint64_t> capacity;
    std::uint64_t others_bytes = 0;
};

// gpu_memory_leak and gpu_memory_near_oom (subject "job") from one process's steps, oldest first.
//   leak: after the first two steps (the optimizer's state appears in the first), what the steps keep
//   grew by gpu_memory_leak_bytes or more, in at least half of the steps, in both halves of them (a
//   plateau after start-up is not a leak); the summary says when, at that rate, the GPU is full.
//   near OOM: the highest step peak in the window reached gpu_memory_alarm_percent (warning) or
//   gpu_memory_near_oom_percent (critical) of what the GPU leaves the process (its memory less other
//   processes'); the summary says whether twice the batch fits and which batch does.
std::vector<diagnose::Finding> judge_step_memory(const std::vector<StepAllocation>& steps,
                                                 const StepMemoryContext& where, const Thresholds& t);

// A step's peak memory as a line in its batch: fixed + per_sample x samples.
struct BatchMemoryModel {
    double fixed = 0, per_sample = 0;
    std::size_t sizes = 1;  // the batch sizes it was drawn through
};

// The line from steps with their sample counts: a least-squares fit through each batch size's highest
// peak when the steps saw two sizes or more (a batch that grew, an epoch's short last batch), else the
// line from what the steps keep to the highest peak. None when they cannot tell (no samples, no growth).
std::optional<BatchMemoryModel> batch_memory_model(const std::vector<StepAllocation>& steps);

// The largest batch whose peak stays within `budget` bytes (0 when not even one sample does).
std::int64_t largest_batch(const BatchMemoryModel& m, double budget);

}  // namespace baton::gpu_memory
