// Parser for /proc/vmstat: the few counters behind swap traffic, major faults and OOM kills.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace baton::os {

struct VmStat {
    std::optional<std::uint64_t> pswpin, pswpout;  // pages swapped in/out since boot
    std::optional<std::uint64_t> pgmajfault;
    std::optional<std::uint64_t> oom_kill;  // kernel >= 4.13
};

void parse_vmstat(std::string_view text, VmStat& out);

}  // namespace baton::os
