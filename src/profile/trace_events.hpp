// A PyTorch profiler trace read as events (issue 33): the Chrome-trace JSON that
// `torch.profiler.profile(...).export_chrome_trace()` and `tensorboard_trace_handler` write, read
// by streaming (nlohmann's SAX parser: no document tree), so memory stays near the events kept, not
// the file's size. Two layouts exist:
//   - Kineto's (PyTorch built with Kineto, every pip and conda build): an object whose "traceEvents"
//     array holds complete events {"ph": "X", "cat": "kernel" | "cpu_op" | "cuda_runtime" |
//     "gpu_memcpy" | "gpu_memset" | "python_function" | "user_annotation" | ..., "name", "pid",
//     "tid", "ts", "dur" (microseconds), "args": {"correlation", "External id", "device", "stream",
//     "bytes", "Input type", ...}}; older versions capitalise the categories ("Kernel", "Memcpy",
//     "Runtime", "Operator").
//   - the legacy profiler's (PyTorch built without Kineto, as Debian's 1.13): a bare array of
//     {"name", "ph": "X", "ts", "dur", "tid", "pid": "CPU functions", "args": {}} with no category
//     (read as CPU operators; "ProfilerStep#N" as the step annotations).
// Only complete ("X") events are kept; names are interned (a trace repeats a few hundred names a
// million times). Hostile input (truncated, not JSON, nested past 64 levels, absurd numbers) is one
// error naming where, never a crash.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.hpp"
#include "core/result.hpp"

namespace baton::profile {

enum class Category : std::uint8_t {
    cpu_op,           // an ATen operator or a module (the host)
    user_annotation,  // record_function ranges, "ProfilerStep#N"
    python_function,  // with_stack's Python frames
    cuda_runtime,     // cudaLaunchKernel, cudaMemcpyAsync, cudaStreamSynchronize, ...
    cuda_driver,
    kernel,  // a GPU kernel
    gpu_memcpy,
    gpu_memset,
    gpu_user_annotation,
    other,
};

}  // namespace baton::profile

// "cpu_op", "kernel", ... (enum_name)
template <>
struct baton::EnumNames<baton::profile::Category> {
    static constexpr std::array list = {
        "cpu_op", "user_annotation", "python_function", "cuda_runtime",        "cuda_driver",
        "kernel", "gpu_memcpy",      "gpu_memset",      "gpu_user_annotation", "other"};
};

namespace baton::profile {

// The category of a trace's "cat" value (either spelling); `other` for what baton does not use.
Category category_of(std::string_view cat);

struct TraceEvent {
    Category category = Category::other;
    std::uint32_t name = 0;  // index into Trace::names
    double ts_us = 0, dur_us = 0;
    std::int64_t pid = 0, tid = 0;  // a string pid or tid ("CPU functions") is hashed to a number
    std::int64_t correlation = -1;  // a launch and its kernel share it
    std::int64_t external_id = -1;  // an operator and what it launched share it
    int device = -1;
    std::int64_t stream = -1;
    std::int64_t bytes = -1;  // memcpy / memset
    // An operator's Python stack as one string, innermost frame first, frames separated by ';'
    // ("train.py(42): step;train.py(80): main"): args "Call stack", which Kineto of PyTorch 1.8 to
    // 1.10 writes with with_stack and baton's hook adds to a legacy trace. Index into Trace::names,
    // or kNoStack. (Newer Kineto writes python_function events instead.)
    static constexpr std::uint32_t kNoStack = UINT32_MAX;
    std::uint32_t stack = kNoStack;
    // An operator's first input type (args "Input type", with record_shapes: "float",
    // "c10::BFloat16"), index into Trace::names, or kNoStack.
    std::uint32_t input_type = kNoStack;
};

// A device as the trace's "deviceProperties" describes it (Kineto writes one per device the process
// saw, whether or not its activity was recorded).
struct DeviceProperties {
    int id = -1;
    std::string name;  // "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-32GB", "AMD Radeon Graphics", "ARTEMIS"
    // CUDA's compute capability (7.0: Volta, 8.0: Ampere, 9.0: Hopper); ROCm writes its gfx
    // version here (9.0 for an MI250's gfx90a), so it means nothing without the vendor. -1: absent.
    int compute_major = -1, compute_minor = -1;
};

struct Trace {
    bool legacy = false;  // the legacy profiler's bare array
    std::vector<std::string> names;
    std::vector<TraceEvent> events;  // in file order
    std::vector<DeviceProperties> devices;
    // Kernels recorded by CUPTI's range profiler ("cuda_profiler_range", read as kernels): each was
    // replayed to count hardware metrics, so their times are not the run's.
    std::size_t range_profiler_kernels = 0;
    // Complete events of categories baton does not read ("mtia_ccp_events", ...), with their
    // counts: the first 32 such categories.
    std::vector<std::pair<std::string, std::size_t>> other_categories;
    const std::string& name_of(const TraceEvent& e) const { return names[e.name]; }
};

struct TraceLimits {
    std::size_t max_events = 50'000'000;
    std::size_t max_depth = 64;
    // parse_trace's text is read this many bytes a piece (0: 256 KiB, as files are): the tests and
    // the fuzzer cut values between pieces everywhere with small ones.
    std::size_t piece_bytes = 0;
};

// Errors: not JSON (with the byte offset), truncated, not a trace (no traceEvents; an events array
// holding something other than objects, as a bare array of numbers or arrays), too deep, too many
// events.
Result<Trace> parse_trace(std::string_view json, const TraceLimits& limits = {});

// A trace file, plain or gzipped (tensorboard_trace_handler(use_gzip=True) writes .json.gz; told
// apart by its first bytes, not its name), read by streaming: memory holds the events, not the
// file. Errors as parse_trace's, and the file's own (missing, unreadable, not a regular file, a
// broken gzip stream) in one line naming it.
Result<Trace> read_trace_file(const std::string& path, const TraceLimits& limits = {});

// A trace held in memory, gzipped (as the run history keeps it) or plain, inflated as it is parsed.
Result<Trace> parse_trace_bytes(std::string_view bytes, const TraceLimits& limits = {});

}  // namespace baton::profile
