// Where a process writes: its working directory (relative paths land there) and the regular
// files it holds open for writing (/proc/PID/fd's links whose mode has the write bit, as the kernel
// sets it from the open mode; /proc/PID/fdinfo's flags where the mode says nothing). Enough to tell which filesystem a
// job's checkpoints and logs fill (disk_space_low). Read for a few processes only (the sampler's writers: a job's) and
// cached per process for `refresh_seconds`.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace baton::os {

// The open-flags field of a /proc/PID/fdinfo/N text ("flags:\t0100002"), or -1.
long fdinfo_flags(std::string_view fdinfo);

class WrittenPaths {
  public:
    explicit WrittenPaths(std::string proc_root) : proc_root_(std::move(proc_root)) {}

    // The cwd first, then the files open for writing (at most 256, each once); empty when unreadable.
    const std::vector<std::string>& paths(std::uint32_t pid, std::int64_t start_time_ms, double now);

    // Forgets processes not asked about since `before`.
    void forget_older_than(double before);

    static constexpr double refresh_seconds = 10;

  private:
    struct Entry {
        std::int64_t start_time_ms = 0;
        double read_at = -1e9, asked_at = 0;
        std::vector<std::string> paths;
    };
    std::string proc_root_;
    std::unordered_map<std::uint32_t, Entry> cache_;
};

}  // namespace baton::os
