// GpuBackend: the one interface every GPU vendor source fills (style.md #1). Today the NVML
// backend; tests drive that same backend against the fake libnvidia-ml in tests/fake_nvml.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sample/snapshot.hpp"

namespace baton {

struct GpuReading {
    GpuState state = GpuState::not_read;
    // "ok" when the devices answered this tick; otherwise one line saying why the list is
    // empty or stale ("no NVIDIA driver: libnvidia-ml.so.1 not found", "NVML call
    // nvmlDeviceGetPowerUsage did not return within 2000 ms; GPU values are stale").
    std::string status;
    std::vector<GpuInfo> gpus;                       // in PCI bus order
    std::optional<std::string> driver_version;       // e.g. "550.54.15", once NVML answered
    std::optional<std::string> nvml_version;         // e.g. "12.550.54.15"
    std::optional<std::string> cuda_driver_version;  // the CUDA version the driver supports, e.g. "12.4"
};

class GpuBackend {
  public:
    virtual ~GpuBackend() = default;

    // Starts reading every GPU in the background; `now` is monotonic seconds (for slow
    // fields sampled less often). The sampler starts the GPU read, scans /proc meanwhile,
    // then calls end(): NVML calls (milliseconds each on real drivers) overlap the scan.
    virtual void begin(double now) = 0;

    // The reading begun by begin(). Returns within the configured per-call deadline even
    // when the driver hangs (then: the last good values, marked stale). The reference is
    // valid until the next begin().
    virtual const GpuReading& end() = 0;

    // begin(now) then end().
    GpuReading read(double now) {
        begin(now);
        return end();
    }
    // Thread: one thread calls begin/end/read, in that order.
};

struct NvmlOptions {
    std::string library_path;  // empty: $BATON_NVML_LIBRARY, else "libnvidia-ml.so.1"
    int deadline_ms = 2000;
    double pcie_interval_seconds = 5.0;
    bool xid_events = true;        // watch NVML's critical-error events (XIDs) after the first reading
    double xid_poll_seconds = 10;  // how often the XID watch drains the driver's queue
};

// Never fails: a missing library or driver gives a backend whose readings say so.
std::unique_ptr<GpuBackend> make_nvml_backend(const NvmlOptions& options);

// True once a backend was destroyed while its worker was stuck inside NVML or its loading (a
// driver that never answers, a dlopen that never returns). Such a process must end with _exit
// after flushing its output: exit() would wait for the dynamic loader's lock the stuck dlopen
// holds, or run the library's destructors while a thread is still inside it (cli/main.cpp).
bool gpu_worker_abandoned();
// Marks that such a worker was left behind (the benches' CUDA and NCCL workers: measure/call_deadline.hpp).
void note_gpu_worker_abandoned();

}  // namespace baton
