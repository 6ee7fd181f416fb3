// Parser for /proc/diskstats.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace baton::os {

struct DiskCounters {
    std::string_view name;  // points into the parsed text
    std::uint64_t reads = 0, sectors_read = 0, read_ms = 0;
    std::uint64_t writes = 0, sectors_written = 0, write_ms = 0;
    std::uint64_t io_ticks_ms = 0;  // time the device had I/O in flight
};

// Fills `out` with one entry per well-formed line (14 or more fields); malformed lines are
// skipped. Sectors are always 512 bytes in this file, whatever the device's sector size.
void parse_diskstats(std::string_view text, std::vector<DiskCounters>& out);

}  // namespace baton::os
