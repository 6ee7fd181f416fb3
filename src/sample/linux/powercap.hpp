// The CPU packages' energy from the kernel's powercap interface (RAPL: Intel since Sandy Bridge, AMD
// since Zen through the same driver): SYS/class/powercap/intel-rapl:N/energy_uj, one directory per
// package domain (name "package-N"), a microjoule counter that wraps at max_energy_range_uj. The
// reader adds up each package's increments across wraps into one running total. Since Linux 5.10 the
// counters are readable by root alone (CVE-2020-8694): elsewhere the total is absent and why_not()
// says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sample/linux/kept_file.hpp"

namespace baton::os {

class PowercapReader {
  public:
    explicit PowercapReader(std::string sys_root);

    // The packages' energy since the first read, in joules (absent when no package counter is readable).
    std::optional<double> read();
    // Why read() gives nothing ("no RAPL package domain under /sys/class/powercap", "... readable by root
    // only"); empty once a counter was read.
    const std::string& why_not() const { return why_not_; }

  private:
    struct Package {
        std::string energy_path;
        KeptFile energy;             // open for the sampler's life, re-read each tick (kept_file.hpp)
        std::uint64_t range_uj = 0;  // where the counter wraps (0: unknown, a decrease is then dropped)
        std::optional<std::uint64_t> last_uj;
    };
    void discover();
    std::string sys_root_;
    std::vector<Package> packages_;
    bool discovered_ = false;
    double joules_ = 0;
    std::string why_not_;
    ReadBuffer buf_;
};

// Parses a sysfs counter file's text ("123456\n"); nullopt when it is not one.
std::optional<std::uint64_t> parse_counter(std::string_view text);

}  // namespace baton::os
