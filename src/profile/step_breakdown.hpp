// Where each millisecond of a training step went, from a profiler trace (issue 33): per step and
// per GPU, the step's wall time cut into what the GPU ran (kernels by class, communication, copies,
// memset) and why it idled (docs/profile.md defines each number); per step on the host, the time
// in the DataLoader, copies to the device, forward, backward, the optimizer and synchronising
// calls; over the window, the top kernels and operators, the GEMMs' precision, the communication
// hidden under compute, and every place the host waited for the GPU, with its Python line. Pure:
// a Trace in, numbers out; the rules (profile_rules) judge them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "profile/kernel_classes.hpp"
#include "profile/time_partition.hpp"
#include "profile/trace_events.hpp"

namespace baton::profile {

// A GPU's wall time in a step, a partition: at each instant the first of these that ran wins
// (compute kernels by class, then communication kernels, then copies, then memset), else the GPU
// idled, and the idle time is split by why:
//   idle_host_wait:  the next activity had not been launched yet (the host was late: the
//                    DataLoader, Python, a sync's drained queue, the optimizer on the CPU);
//   idle_launch_gap: it had been launched, and the GPU was getting to it (launch latency, and the
//                    few microseconds between back-to-back kernels; under 10 us when queued before);
//   idle_other:      it had been queued for longer and waited on something else (another stream,
//                    an event), or the trace does not say when it was launched.
enum class GpuSlice : std::uint8_t {
    gemm,
    conv,
    attention,
    elementwise,
    reduction,
    other_kernel,
    communication,
    memcpy_h2d,
    memcpy_d2h,
    memcpy_d2d,
    memset,
    idle_host_wait,
    idle_launch_gap,
    idle_other,
};

}  // namespace baton::profile

// "gemm", ..., "idle_other": the JSON keys (enum_name).
template <>
struct baton::EnumNames<baton::profile::GpuSlice> {
    static constexpr std::array list = {
        "gemm",       "conv",       "attention",  "elementwise", "reduction",      "other_kernel",    "communication",
        "memcpy_h2d", "memcpy_d2h", "memcpy_d2d", "memset",      "idle_host_wait", "idle_launch_gap", "idle_other"};
};

namespace baton::profile {

constexpr std::size_t kGpuSlices = EnumNames<GpuSlice>::list.size();
bool is_idle(GpuSlice s);

// The host's wall time in a step, on the thread that marks the steps, a partition by priority:
//   sync:      in a call that waits for the GPU (cudaStreamSynchronize, cudaDeviceSynchronize,
//              cudaEventSynchronize, a synchronous cudaMemcpy);
//   data:      in the DataLoader's __next__;
//   optimizer: in Optimizer.step / zero_grad;
//   backward:  from the first to the last autograd function of the step (any thread);
//   to_device: in a top-level .to() / copy_ (the batch to the GPU, a dtype conversion);
//   forward:   from the first to the last other top-level operator before the backward;
//   other:     the rest (Python between operators, logging, the profiler's own step).
enum class HostPhase : std::uint8_t { sync, data, optimizer, backward, to_device, forward, other };

}  // namespace baton::profile

template <>
struct baton::EnumNames<baton::profile::HostPhase> {
    static constexpr std::array list = {"sync", "data", "optimizer", "backward", "to_device", "forward", "other"};
};

namespace baton::profile {

constexpr std::size_t kHostPhases = EnumNames<HostPhase>::list.size();

struct GpuStep {
    int device = 0;
    std::array<double, kGpuSlices> us{};  // adds up to the step's duration
    std::size_t kernels = 0;              // kernels that started in the step
    double kernel_us = 0;                 // their summed durations (streams overlapping count each)
    double comm_us = 0;                   // time any communication kernel ran
    double comm_hidden_us = 0;            // ... of it, while a compute kernel ran too
    double pageable_h2d_us = 0;           // summed durations of host-to-device copies from pageable memory
    std::size_t pageable_h2d_copies = 0;
    std::int64_t pageable_h2d_bytes = 0;
    double fp32_gemm_us = 0;  // summed durations of GEMM kernels whose name says fp32 (no tensor cores)
    double gemm_us = 0;       // of every GEMM kernel
    // GPU idle (host wait and launch gaps) while the step thread was busy outside the DataLoader and
    // outside syncs, and not charged to a sync: issuing work too slowly (launch_bound's cost).
    double idle_host_busy_us = 0;
    // GPU idle charged to the syncs that drained its queue (sync_cost; sync_in_step's cost). The
    // two never share an instant: together at most idle().
    double idle_sync_us = 0;
    double idle() const;
    double busy() const;  // not idle
};

struct HostStep {
    std::array<double, kHostPhases> us{};  // adds up to the step's duration
};

struct Step {
    std::int64_t number = -1;  // N of "ProfilerStep#N"; -1: the trace had no steps, this is all of it
    double start_us = 0, dur_us = 0;
    HostStep host;
    std::vector<GpuStep> gpus;  // by device, as Analysis::devices
};

// One place the host waited for the GPU (or, in a CPU-only trace, would have): a synchronising call
// under an operator at a Python line.
struct SyncSite {
    std::string call;   // "cudaStreamSynchronize", ...; "" for a scalar read in a trace without GPU
    std::string op;     // the outermost operator around it: "aten::item", "aten::nonzero", ...
    std::string where;  // the innermost frame of the user's code, "train.py(42): step"; "" when the trace has no stacks
    std::size_t count = 0;
    std::size_t steps = 0;  // steps in which it happened
    double host_us = 0;     // the calls' summed durations (the host blocked)
    // The GPU idle the calls caused (sync_cost.hpp: from the drain, at most the GPU time each call
    // blocked the host for, each idle instant charged once over all sites).
    double gpu_idle_us = 0;
};

struct TopKernel {
    std::string name;
    KernelClass kind = KernelClass::other;
    // A GEMM's, by its name, else by the first input type of the operator that launched it.
    GemmPrecision precision = GemmPrecision::unknown;
    std::size_t count = 0;
    double us = 0;  // summed durations in the steps
};

struct TopOp {
    std::string name;
    std::size_t count = 0;
    double self_us = 0;   // its own time, its children's taken out
    double total_us = 0;  // with its children, top-level calls only (not counted twice when nested)
};

enum class LoaderKind : std::uint8_t { none, in_process, workers };

}  // namespace baton::profile

template <>
struct baton::EnumNames<baton::profile::LoaderKind> {
    static constexpr std::array list = {"none", "in_process", "workers"};
};

namespace baton::profile {

// One step drawn as lanes, as the Chrome trace viewer would (readable without it): the host's step
// thread by phase, and each GPU stream by what ran on it (idle left empty).
struct TimelineLane {
    std::string name;           // "host", "GPU0 stream 7"
    bool gpu = false;           // pieces labelled by GpuSlice (else HostPhase; -1: other)
    std::vector<Piece> pieces;  // in time order, within the step
};
struct Timeline {
    std::int64_t step = -1;  // the step drawn: the one of median duration
    double start_us = 0, dur_us = 0;
    std::vector<TimelineLane> lanes;
};

// What a GPU's generation allows, for advice: tensor cores and their number formats. From the
// trace's deviceProperties (CUDA's compute capability) and runtime (hip* calls: ROCm).
enum class GpuArch : std::uint8_t {
    unknown,    // the trace does not say
    pre_volta,  // compute capability below 7.0: no tensor cores
    volta,      // 7.0, 7.2 (V100, Xavier): fp16 tensor cores; no TF32, no bf16
    turing,     // 7.5 (T4, RTX 20): fp16 (and int8) tensor cores; no TF32, no bf16
    ampere,     // 8.0, 8.6, 8.7 (A100, A10, RTX 30): TF32, bf16, fp16
    ada,        // 8.9 (L4, L40, RTX 40): as Ampere, and fp8
    hopper,     // 9.x (H100, H200): TF32, bf16, fp8
    blackwell,  // 10.x and later (B200, RTX 50): TF32, bf16, fp8, fp4
    amd,        // a ROCm device: matrix cores run fp32, fp16 and bf16 (the CDNA generations differ)
};

}  // namespace baton::profile

template <>
struct baton::EnumNames<baton::profile::GpuArch> {
    static constexpr std::array list = {"unknown", "pre_volta", "volta",     "turing", "ampere",
                                        "ada",     "hopper",    "blackwell", "amd"};
};

namespace baton::profile {

// Activity of a device kind baton does not judge (Meta's MTIA, ...): its categories and event counts.
struct OtherDevice {
    std::string kind;  // "MTIA"
    std::vector<std::pair<std::string, std::size_t>> categories;
};

struct Analysis {
    bool legacy = false;      // the legacy profiler's trace (no GPU activity, no categories)
    bool has_gpu = false;     // kernels, copies or memsets
    bool has_stacks = false;  // python_function events or "Call stack" args: sync sites have lines
    bool has_steps = false;   // ProfilerStep#N annotations
    std::vector<int> devices;
    std::vector<Step> steps;
    std::vector<SyncSite> syncs;                              // most GPU idle (else host time) first
    std::vector<TopKernel> kernels;                           // most time first, all of them (views cut)
    std::vector<TopOp> ops;                                   // most self time first, all of them
    std::array<double, kGemmPrecisions> gemm_precision_us{};  // by GemmPrecision
    Timeline timeline;
    std::vector<double> median_kernel_us;  // by device, as `devices`
    // The DataLoader as the trace names its iterator: in the training process (num_workers=0), with
    // worker processes, or not seen.
    using Loader = LoaderKind;
    Loader loader = Loader::none;
    std::size_t events = 0;
    std::vector<DeviceProperties> properties;  // the trace's deviceProperties
    bool rocm = false;                         // the runtime's calls are HIP's (hipLaunchKernel, ...)
    // Kernels of CUPTI's range profiler (each replayed to count metrics: their times are not the
    // run's, and the GPU rows and GPU findings are not judged).
    std::size_t range_profiler_kernels = 0;
    std::vector<OtherDevice> other_devices;

    double step_us() const;  // summed step durations
    // A device's generation: its deviceProperties' compute capability (unknown without them).
    GpuArch arch(int device) const;
    // Averages over the steps: the GPU's slices of `device`, the host's phases.
    GpuStep mean_gpu(int device) const;
    HostStep mean_host() const;
};

Analysis analyse(const Trace& trace);

// Why a sync site has no line, for the views and the findings: a Kineto trace recorded without
// with_stack=True, or the legacy profiler's, which records no Python stacks at all.
std::string no_stack_hint(const Analysis& a);

// Whether a Python frame ("file.py(12): fn") is the user's code: not PyTorch's, not a library's
// (site-packages, dist-packages), not Python's own, not a built-in, not a module marker.
bool is_user_frame(std::string_view frame);

}  // namespace baton::profile
