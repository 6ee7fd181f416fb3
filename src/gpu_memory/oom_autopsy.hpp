// A CUDA out-of-memory failure explained: what held the GPU's memory when the request failed, why it
// did not fit, and the change to make. Built from what there is: PyTorch's message (always, when it
// printed one), NVML's view of the GPU at the job's last sample (the other processes on it), and the
// hook's capture (the allocator's blocks, the tensors it found, the allocation stacks with
// --memory-history). The fix follows the cause: a single request larger than the GPU, a per-process
// limit, fragmentation (the reserve's free space could not hold the request), another process's
// memory, or memory in use (then by what uses the most: activations, optimizer state, parameters).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diagnose/finding.hpp"
#include "gpu_memory/allocator_capture.hpp"
#include "gpu_memory/oom_message.hpp"
#include "gpu_memory/step_memory.hpp"

namespace baton::gpu_memory {

// A process on the failing GPU at the job's last sample (NVML).
struct GpuOccupant {
    std::uint32_t pid = 0;
    std::uint64_t bytes = 0;
    std::string name, user;
    bool job = false;  // one of the job's own processes
};

struct GpuAtFailure {
    unsigned index = 0;  // NVML's (PCI bus order)
    std::string name;
    std::optional<std::uint64_t> total_bytes;
    std::vector<GpuOccupant> processes;
};

// What the allocated memory was spent on. model_state: parameters, gradients and optimizer state when
// they could not be told apart (the memory held across steps, from the per-step figures).
enum class MemoryUse { parameters, gradients, optimizer_state, model_state, activations, other };

enum class OomCause {
    too_large,        // one request larger than the whole GPU (or its allowed share)
    limit,            // torch.cuda.set_per_process_memory_fraction's limit reached
    fragmentation,    // the reserve's unallocated space exceeded the request
    other_processes,  // another process held the memory the request needed
    memory_in_use,    // the job's own tensors filled the GPU
    unknown,          // an OOM without numbers ("CUDA error: out of memory")
};

struct AllocationSite {
    std::string where;  // "train.py:42 in forward": the innermost frame outside PyTorch
    MemoryUse use = MemoryUse::other;
    std::uint64_t bytes = 0;
    std::size_t blocks = 0;
};

// The memory the job's steps used before the failure, from the hook's per-step figures.
struct StepMemory {
    std::uint64_t held_bytes = 0;           // allocated at a step's end: kept across steps (model, optimizer)
    std::uint64_t held_first = 0;           // the same after the first two steps (the optimizer's state is made)
    std::uint64_t peak_bytes = 0;           // the largest step's peak allocation
    std::int64_t batch_size = 0;            // samples of that step (0: unknown)
    std::int64_t steps = 0;                 // steps with figures
    std::optional<BatchMemoryModel> model;  // the steps' peak as a line in the batch
};

struct OomInputs {
    std::optional<OomMessage> message;
    const OomCapture* capture = nullptr;
    std::optional<GpuAtFailure> gpu;
    std::optional<StepMemory> steps;
};

struct OomAutopsy {
    OomCause cause = OomCause::unknown;
    std::optional<unsigned> cuda_device;  // the process's device number (the message's "GPU N")
    std::optional<unsigned> gpu;          // NVML's index, when known
    std::optional<std::uint64_t> requested, capacity, free, allowed, allocated, reserved, unallocated;
    std::optional<std::uint64_t> largest_free_block;  // the largest inactive block of the reserve
    std::uint64_t others_bytes = 0;                   // other processes' memory on the GPU
    std::vector<GpuOccupant> others;                  // largest first
    // What the allocated memory held, largest first, and how it was told (for the reader).
    std::vector<std::pair<MemoryUse, std::uint64_t>> uses;
    std::string uses_from;
    std::optional<StepPhase> phase;
    std::string failed_at;  // where the failing request came from ("train.py:42 in forward")
    std::optional<std::int64_t> step, batch_size;
    std::vector<AllocationSite> sites;          // the largest live allocation sites (with --memory-history)
    std::optional<std::int64_t> largest_batch;  // the largest batch that would have fit, estimated
    std::optional<std::uint64_t> amp_saves, checkpointing_saves;
    // What the steps kept grew (by a quarter or more, after the first two steps): a tensor kept from
    // each step filled the GPU, whatever the batch (gpu_memory_leak).
    std::optional<std::pair<std::uint64_t, std::uint64_t>> kept_growth;  // from, to
    std::int64_t kept_steps = 0;
    bool autocast = false;
    std::string torch_version;
    std::string summary, fix, snippet;
};

OomAutopsy explain_oom(const OomInputs& in);

// The cuda_oom finding of an autopsy; `line`: PyTorch's message as printed (the evidence's quote).
diagnose::Finding oom_finding(const OomAutopsy& a, std::string_view line);

// "optimizer state", "activations", ...: a category as the finding and the report name it.
const char* memory_use_label(MemoryUse u);

// Whether `version` ("2.4.1+cu121", "1.13.1") is at least major.minor.
bool torch_at_least(std::string_view version, int major, int minor);

}  // namespace baton::gpu_memory

template <>
struct baton::EnumNames<baton::gpu_memory::MemoryUse> {
    static constexpr std::array list = {"parameters",  "gradients",   "optimizer_state",
                                        "model_state", "activations", "other"};
};
template <>
struct baton::EnumNames<baton::gpu_memory::OomCause> {
    static constexpr std::array list = {"too_large",       "limit",         "fragmentation",
                                        "other_processes", "memory_in_use", "unknown"};
};
