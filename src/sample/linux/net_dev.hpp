// Parser for /proc/net/dev.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace baton::os {

struct NetCounters {
    std::string_view name;  // points into the parsed text
    std::uint64_t rx_bytes = 0, tx_bytes = 0;
};

// Skips the two header lines and any malformed line. Interface names may contain ':'
// (aliases); the last ':' before the numbers separates name from counters.
void parse_net_dev(std::string_view text, std::vector<NetCounters>& out);

}  // namespace baton::os
