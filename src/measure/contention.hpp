// What else was using a link while a bench measured it: a bench below its peak is "saturated"
// when something else ran on the same resource, "degraded" when nothing did. Two snapshots of the
// machine, one before and one after the bench, give every process's and device's rates over the
// bench (ContentionWatch); the functions below read them and name the culprit, or return "".
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sample/sampler.hpp"
#include "sample/snapshot.hpp"

namespace baton::measure {

// Other processes' CPU: the busiest one besides `own_pid` when the others together used more
// than half a core ("pid 4242 (stress-ng) used 190 % CPU").
std::string cpu_contention(const Snapshot& s, std::uint32_t own_pid);
// Reads of `disk` beyond the bench's own (`own_read_bytes_per_second`): when they exceed a tenth
// of it ("other reads of vda at 310 MB/s; the busiest reader: pid 77 (rsync) 290 MB/s").
std::string disk_contention(const Snapshot& s, const std::string& disk, double own_read_bytes_per_second,
                            std::uint32_t own_pid);
// Traffic on `interface` beyond the bench's own, both directions, over a tenth of it.
std::string net_contention(const Snapshot& s, const std::string& interface, double own_bytes_per_second);
// Other processes on GPU `index` (NVML's list of its processes).
std::string gpu_contention(const Snapshot& s, unsigned index, std::uint32_t own_pid);

// Two snapshots around a bench. Never fails: a machine that cannot be sampled gives a watch
// whose snapshot has no processes, and no contention is named.
class ContentionWatch {
  public:
    explicit ContentionWatch(const SamplerOptions& options);
    ~ContentionWatch();
    void start();              // the first snapshot
    const Snapshot& finish();  // the second: rates over the bench
    const Snapshot& snapshot() const { return snap_; }

  private:
    std::unique_ptr<Sampler> sampler_;
    Snapshot snap_;
};

}  // namespace baton::measure
