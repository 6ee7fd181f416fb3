// Parser for /proc/PID/stat, the one per-process file read on every tick.
#pragma once

#include <cstdint>
#include <string_view>

namespace baton::os {

struct PidStat {
    std::uint32_t pid = 0, ppid = 0;
    std::string_view comm;  // points into the parsed text; may hold spaces and ')'
    char state = '?';
    std::uint64_t utime = 0, stime = 0;  // clock ticks
    unsigned num_threads = 0;
    std::uint64_t starttime = 0;  // clock ticks after boot
    std::uint64_t rss_pages = 0;
};

// The command name sits in parentheses and may itself contain ") (": the name ends at the
// LAST ')' of the line. False on anything malformed (truncated, non-numeric fields).
bool parse_pid_stat(std::string_view text, PidStat& out);

}  // namespace baton::os
