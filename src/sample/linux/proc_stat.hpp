// Parser for /proc/stat: CPU time counters (total and per core), context switches, and the
// runnable/blocked task counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace baton::os {

// Cumulative jiffies of one "cpu" line. Guest time is already inside user/nice (kernel
// accounting), so it is not added again.
struct CpuTicks {
    std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    std::uint64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};

struct ProcStat {
    CpuTicks total;
    std::vector<std::pair<unsigned, CpuTicks>> cores;  // (cpu id, ticks); offline cores are missing
    std::optional<std::uint64_t> context_switches;
    unsigned procs_running = 0, procs_blocked = 0;
    std::optional<std::uint64_t> boot_time_seconds;  // btime
    std::optional<std::uint64_t> forks;              // "processes": tasks created since boot (threads too)
};

// Parses the text of /proc/stat into `out` (reusing its vectors). Lines it does not know are
// skipped; a "cpu" line with fewer than 4 numbers (very old kernels have 4) is an error.
bool parse_proc_stat(std::string_view text, ProcStat& out);

}  // namespace baton::os
