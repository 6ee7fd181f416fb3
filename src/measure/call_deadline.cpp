#include "measure/call_deadline.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "sample/gpu/gpu_backend.hpp"

namespace baton::measure {

void CallWatch::begin(const char* name) {
    since_.store(monotonic_seconds());
    name_.store(name);
}

void CallWatch::end() {
    name_.store(nullptr);
}

const char* CallWatch::overdue(double seconds) const {
    const char* name = name_.load();
    if (!name) return nullptr;
    return monotonic_seconds() - since_.load() > seconds ? name : nullptr;
}

Result<BenchReport> run_with_deadline(std::function<Result<BenchReport>(CallWatch&)> work, double deadline_seconds,
                                      const std::function<void(int)>& on_request) {
    // Shared with the worker, which may outlive this call.
    struct Shared {
        CallWatch watch;
        std::atomic<bool> done{false};
        std::optional<Result<BenchReport>> result;
    };
    auto shared = std::make_shared<Shared>();
    std::thread worker([shared, work = std::move(work)] {
        Result<BenchReport> r = work(shared->watch);
        shared->result.emplace(std::move(r));
        shared->done.store(true);
    });
    for (;;) {
        if (shared->done.load()) {
            worker.join();
            return std::move(*shared->result);
        }
        if (const int req = shared->watch.take_request(); req) {
            if (on_request) on_request(req);
            shared->watch.answer();
        }
        if (const char* call = shared->watch.overdue(deadline_seconds)) {
            worker.detach();  // inside the driver: joining would hang
            note_gpu_worker_abandoned();
            return make_error(fmt::format("{} did not return within {:g} s (the driver hangs; the bench gave up on it)",
                                          call, deadline_seconds));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

}  // namespace baton::measure
