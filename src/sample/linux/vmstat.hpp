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
    // Sum of every pgsteal_* counter plus pswpin and pswpout: it moves whenever the kernel
    // reclaims or swaps pages, the only common way a process's RSS changes while it does
    // not run. Only its changes mean anything. Absent without pgsteal_* lines.
    std::optional<std::uint64_t> reclaim_activity;
};

void parse_vmstat(std::string_view text, VmStat& out);

}  // namespace baton::os
