// Who owns a run in the history: the `baton run` process, named so that a later reader can tell
// whether it still lives. A pid alone is not enough: after a kill -9 the pid is free for reuse,
// and after a reboot every pid is. So the owner is its pid, the pid's start time (clock ticks after
// boot, /proc/PID/stat field 22) and the boot (/proc/sys/kernel/random/boot_id).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace baton {

struct RunOwner {
    std::int64_t pid = 0;
    std::optional<std::uint64_t> start_ticks;  // absent when /proc could not say (or recorded before schema 4)
    std::string boot_id;                       // empty likewise
};

// This process.
RunOwner current_owner();

// False when the recorded owner is certainly gone: another boot, no such pid, or the pid now
// belongs to a process that started at another time. True otherwise (alive, or no way to tell:
// a pid in another pid namespace that happens to exist here counts as alive unless its start
// time differs).
bool owner_alive(const RunOwner& owner);

// The start time of `pid` in clock ticks after boot, from `proc_root`/PID/stat.
std::optional<std::uint64_t> process_start_ticks(std::int64_t pid, const std::string& proc_root = "/proc");

}  // namespace baton
