// Kineto-layout traces built by the tests (issue 33): the events a PyTorch profiler trace of a GPU
// run holds, in the documented Chrome-trace format, so each rule and each number of the breakdown
// is tested on a timeline whose answer is known. Times in microseconds; the host is pid 1, tid 1
// (the thread that marks the steps), the GPU's events carry args.device and args.stream as Kineto
// writes them, and a launch and its kernel share a correlation id.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace baton::test {

class TraceBuilder {
  public:
    // "ProfilerStep#N" on the host thread.
    TraceBuilder& step(std::int64_t n, double ts, double dur) {
        return add(fmt::format(R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, )"
                               R"("tid": 1, "ts": {}, "dur": {}, "args": {{}}}})",
                               n, ts, dur));
    }
    // A host operator (cpu_op), or an annotation such as the DataLoader's or the optimizer's.
    TraceBuilder& op(const std::string& name, double ts, double dur, std::int64_t tid = 1,
                     const std::string& category = "cpu_op", const std::string& extra_args = "") {
        return add(fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 1, "tid": {}, "ts": {}, )"
                               R"("dur": {}, "args": {{{}}}}})",
                               category, name, tid, ts, dur, extra_args));
    }
    // A Python frame of with_stack ("train.py(42): step").
    TraceBuilder& python(const std::string& frame, double ts, double dur, std::int64_t tid = 1) {
        return op(frame, ts, dur, tid, "python_function");
    }
    // A CUDA runtime call on the host; returns its correlation id.
    std::int64_t runtime(const std::string& name, double ts, double dur, std::int64_t tid = 1) {
        const std::int64_t c = next_correlation_++;
        add(fmt::format(R"({{"ph": "X", "cat": "cuda_runtime", "name": "{}", "pid": 1, "tid": {}, "ts": {}, )"
                        R"("dur": {}, "args": {{"correlation": {}}}}})",
                        name, tid, ts, dur, c));
        return c;
    }
    // A kernel launched at `launch_ts` (a cudaLaunchKernel of 4 us) that ran at [ts, ts+dur).
    TraceBuilder& kernel(const std::string& name, double launch_ts, double ts, double dur, int device = 0,
                         int stream = 7) {
        const std::int64_t c = runtime("cudaLaunchKernel", launch_ts, 4);
        return gpu("kernel", name, ts, dur, c, device, stream, -1);
    }
    TraceBuilder& memcpy(const std::string& name, double launch_ts, double ts, double dur, std::int64_t bytes,
                         int device = 0) {
        const std::int64_t c = runtime("cudaMemcpyAsync", launch_ts, 4);
        return gpu("gpu_memcpy", name, ts, dur, c, device, 7, bytes);
    }
    // `count` kernels of `dur` us, each launched `every` us from `from`, each starting `latency` us after
    // its launch (or when the previous one ends).
    TraceBuilder& kernels(const std::string& name, int count, double from, double every, double dur, double latency = 5,
                          int device = 0) {
        double gpu_free = 0;
        for (int i = 0; i < count; ++i) {
            const double launch = from + i * every;
            const double start = std::max(launch + latency, gpu_free);
            kernel(name, launch, start, dur, device);
            gpu_free = start + dur;
        }
        return *this;
    }
    // A deviceProperties entry, as Kineto writes one per GPU.
    TraceBuilder& device_properties(int id, const std::string& name, int major, int minor) {
        if (!devices_.empty()) devices_ += ", ";
        devices_ += fmt::format(R"({{"id": {}, "name": "{}", "computeMajor": {}, "computeMinor": {}}})", id, name,
                                major, minor);
        return *this;
    }
    std::string json() const {
        return R"({"schemaVersion": 1, "deviceProperties": [)" + devices_ + R"(], "traceEvents": [)" + events_ + "]}";
    }

  private:
    TraceBuilder& gpu(const std::string& cat, const std::string& name, double ts, double dur, std::int64_t c,
                      int device, int stream, std::int64_t bytes) {
        std::string args = fmt::format(R"("device": {}, "stream": {}, "correlation": {})", device, stream, c);
        if (bytes >= 0) args += fmt::format(R"(, "bytes": {})", bytes);
        return add(fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, )"
                               R"("dur": {}, "args": {{{}}}}})",
                               cat, name, device, stream, ts, dur, args));
    }
    TraceBuilder& add(const std::string& event) {
        if (!events_.empty()) events_ += ",\n";
        events_ += event;
        return *this;
    }
    std::string events_, devices_;
    std::int64_t next_correlation_ = 1;
};

}  // namespace baton::test
