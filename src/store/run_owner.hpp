// Who owns a run in the history: the `baton run` process, named so that a later reader can tell
// whether it still lives. A pid alone is not enough: after a kill -9 the pid is free for reuse,
// and after a reboot every pid is. So the owner is its pid, the pid's start time (clock ticks after
// boot, /proc/PID/stat field 22) and the boot (/proc/sys/kernel/random/boot_id).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::store {

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

// BATON_OWNER, the variable baton puts in the environment of every process it starts (baton run's
// command, baton launch's ranks, a queued job): "PID:START_TICKS" of the baton process that owns
// it, so that `baton clean` can tell a leftover (its owner is gone) from a live job's process.
inline constexpr const char* kOwnerVariable = "BATON_OWNER";
std::string owner_token(const RunOwner& owner);
// nullopt when malformed (the variable is anyone's to set: a bad value is no owner).
std::optional<RunOwner> parse_owner_token(std::string_view token);

// The start time of `pid` in clock ticks after boot, from `proc_root`/PID/stat.
std::optional<std::uint64_t> process_start_ticks(std::int64_t pid, const std::string& proc_root = "/proc");

}  // namespace baton::store
