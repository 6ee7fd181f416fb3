// The facts `baton clean` reads from /proc for each process (clean/leftovers.hpp judges them):
// process group, session and start time from /proc/PID/stat, and, where the caller may read it,
// the environment's BATON_OWNER (checked against the living) and a launcher's variables.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "clean/leftovers.hpp"

namespace baton::clean {

// Group, session and start time from one /proc/PID/stat line; nullopt when malformed.
struct StatIds {
    std::uint32_t pgid = 0, sid = 0;
    std::uint64_t start_ticks = 0;
};
std::optional<StatIds> parse_stat_ids(std::string_view stat_line);

// Reads the facts of every process in `snap` from `proc_root`.
std::map<std::uint32_t, ProcessFacts> gather_process_facts(const Snapshot& snap,
                                                           const std::string& proc_root = "/proc");

}  // namespace baton::clean
