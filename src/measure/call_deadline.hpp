// A deadline on every driver call of a bench (design.md: CUDA and NCCL are reached like NVML, with
// a deadline on every call). The bench runs on a worker thread and names each call it makes;
// the caller's thread waits, and when one call runs past the deadline it gives up on the worker
// (left inside the driver, never joined: the process then ends with _exit, see
// gpu_worker_abandoned) and answers "cuMemcpyHtoDAsync_v2 did not return within 30 s".
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include "measure/bench_report.hpp"
#include "core/result.hpp"

namespace baton::measure {

// What the worker is doing, for the waiting thread.
class CallWatch {
  public:
    // Around each driver call: `begin` with its name, `end` when it returned.
    void begin(const char* name);
    void end();
    // The call running for longer than `seconds`, or nullptr.
    const char* overdue(double seconds) const;
    // A request from the worker to the waiting thread (e.g. "sample the PCIe link now"), taken
    // once; the worker sees answered() once the waiting thread has acted on it.
    void ask(int request) {
        answered_.store(false);
        asked_.store(request);
    }
    int take_request() { return asked_.exchange(0); }
    void answer() { answered_.store(true); }
    bool answered() const { return answered_.load(); }

  private:
    std::atomic<bool> answered_{false};
    std::atomic<const char*> name_{nullptr};
    std::atomic<double> since_{0};
    std::atomic<int> asked_{0};
};

// Runs `work` on its own thread and waits for it. `on_request` runs on the caller's thread for
// each request the work makes (CallWatch::ask). Returns the work's result, or the overdue call's
// error. `work` must own everything it touches (capture by value): after a deadline it may still
// be running when this returns.
Result<BenchReport> run_with_deadline(std::function<Result<BenchReport>(CallWatch&)> work, double deadline_seconds,
                                      const std::function<void(int)>& on_request = {});

// One driver call, named for the watch: begin(name), fn(args...), end().
template <typename Fn, typename... Args>
auto timed_call(CallWatch& w, const char* name, Fn fn, Args... args) {
    w.begin(name);
    auto rc = fn(args...);
    w.end();
    return rc;
}

}  // namespace baton::measure
