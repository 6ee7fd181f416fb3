// `baton bench disk PATH`: what the storage under PATH reads at, cold (from the device: O_DIRECT,
// or the file's page cache dropped with posix_fadvise where O_DIRECT is refused) and cached (from
// the page cache), sequentially (1 MiB requests, 4 in flight) and at random (128 KiB requests, the
// size of a typical sample, 8 in flight like a DataLoader's workers). PATH is a directory (a test
// file of --size is written there and removed) or an existing file (read as it is, never
// written). The verdict compares the cold reads with what a training job needs (--need, or the
// read rate a recorded run had); the interface's link rate (PCIe for NVMe, SATA) is shown as the
// peak the device cannot pass.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "measure/bench_report.hpp"
#include "core/result.hpp"
#include "sample/sampler.hpp"

namespace baton::measure {

struct DiskBenchOptions {
    std::string path;
    std::uint64_t size = std::uint64_t{1} << 30;  // the test file's size (a file's own size when PATH is one)
    std::optional<double> need;                   // bytes per second
    std::string need_source;                      // "--need 2GB/s", "run 12 (p95 of its disk reads)"
    double seconds_per_test = 5;                  // each test stops after this long, done or not
    std::string sys_root = "/sys";
    SamplerOptions sampler;
};

// An error (one line) when PATH cannot be read or written, or has no room for the file.
Result<BenchReport> run_disk_bench(const DiskBenchOptions& o);

// The whole disk (as /sys/block names it) holding the file system of a path's device
// `major:minor`, e.g. "nvme0n1" for a partition of it; "" when sysfs does not know it.
std::string disk_of_device(const std::string& sys_root, unsigned major, unsigned minor);
// The link that disk hangs on and its rate: "PCIe 4.0 x4" for NVMe, "SATA 6.0 Gbps"; none when
// unknown (virtual disks, device mapper, USB).
std::optional<double> disk_link_peak(const std::string& sys_root, const std::string& disk, std::string& source);

}  // namespace baton::measure
