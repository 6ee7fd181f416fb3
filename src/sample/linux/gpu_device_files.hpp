// Which NVIDIA GPU device files (/dev/nvidiaN) a process holds open, read from /proc/PID/fd. A CUDA
// context keeps its GPU's file open for its whole life, so this ties GPU use to processes when
// NVML's pids are not ours (baton in a container: NVML reports host pids). Read only when needed
// (the sampler asks only while some GPU process is unmatched) and cached per process.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::os {

// N for a descriptor's link target "DEV_ROOT/nvidiaN" ("/dev/nvidia3" -> 3); nullopt for anything
// else, including the driver's other files (nvidiactl, nvidia-uvm, nvidia-modeset, nvidia-caps/).
std::optional<unsigned> nvidia_minor(std::string_view link_target, std::string_view dev_root);

class GpuDeviceFiles {
  public:
    GpuDeviceFiles(std::string proc_root, std::string dev_root);

    // The minors of the GPU device files `pid` holds open, sorted; empty when none or unreadable
    // (another user's process without privileges). Cached for `refresh_seconds` per process (and
    // read again when the pid was reused: another start time).
    const std::vector<unsigned>& minors(std::uint32_t pid, std::int64_t start_time_ms, double now);

    // Forgets processes not asked about since `before` (called once per tick by the sampler).
    void forget_older_than(double before);

    static constexpr double refresh_seconds = 5;

  private:
    struct Entry {
        std::int64_t start_time_ms = 0;
        double read_at = -1e18, asked_at = 0;
        std::vector<unsigned> minors;
    };
    std::string proc_root_, dev_root_;
    std::map<std::uint32_t, Entry> cache_;
};

}  // namespace baton::os
