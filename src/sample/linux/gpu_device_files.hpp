// Which NVIDIA GPU device files (/dev/nvidiaN) a process holds open, read from /proc/PID/fd. A CUDA
// context keeps its GPU's file open for its whole life, so this ties GPU use to processes when
// NVML's pids are not ours (baton in a container: NVML reports host pids). Read only when needed
// (the sampler asks only while some GPU process is unmatched) and cached per process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace baton::os {

// N for a descriptor's link target "DEV_ROOT/nvidiaN" ("/dev/nvidia3" -> 3); nullopt for anything
// else, including the driver's other files (nvidiactl, nvidia-uvm, nvidia-modeset, nvidia-caps/).
std::optional<unsigned> nvidia_minor(std::string_view link_target, std::string_view dev_root);

class GpuDeviceFiles {
  public:
    GpuDeviceFiles(std::string proc_root, std::string dev_root);

    // The minors of the GPU device files `pid` holds open, sorted; empty when none or unreadable
    // (another user's process without privileges). Read when the process is first asked about (or
    // the pid was reused: another start time); then again after `refresh_seconds` if it used CPU
    // since (`cpu_seconds_total` moved), else only after `idle_refresh_seconds`. A process's
    // descriptor table changes only when its own threads run (open, close, receiving one over a
    // socket), and a CUDA context takes far more CPU to create than the 10 ms a clock tick counts,
    // so a sleeping process need not be looked at again each time: reading /proc/PID/fd of
    // hundreds of idle processes was most of `baton top`'s CPU in a container. The long refresh
    // catches the rest (a process that ran less than a tick); the first one comes after half to
    // all of it, spread by pid, so that processes first seen together do not all come due on one
    // tick.
    const std::vector<unsigned>& minors(std::uint32_t pid, std::int64_t start_time_ms, double cpu_seconds_total,
                                        double now);

    // Forgets processes not asked about since `before` (called once per tick by the sampler).
    void forget_older_than(double before);

    static constexpr double refresh_seconds = 5;
    static constexpr double idle_refresh_seconds = 60;

    // How many times a process's descriptors were read (for tests and benchmarks).
    std::uint64_t reads() const { return reads_; }

  private:
    struct Entry {
        std::int64_t start_time_ms = 0;
        double read_at = 0, asked_at = 0;
        double cpu_seconds_at_read = -1;
        double idle_due = 0;  // read again then even if it used no CPU
        std::vector<unsigned> minors;
    };
    std::string proc_root_, dev_root_;
    std::unordered_map<std::uint32_t, Entry> cache_;
    std::uint64_t reads_ = 0;
};

}  // namespace baton::os
