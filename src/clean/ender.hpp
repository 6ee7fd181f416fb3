// Ending the leftovers `baton clean` listed: by pid only, SIGTERM, a grace, then SIGKILL, and
// before each signal the pid's start time checked against the one listed, so a pid the kernel
// gave to another process meanwhile is never signalled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace baton::clean {

struct EndTarget {
    std::uint32_t pid = 0;
    std::uint64_t start_ticks = 0;  // as listed
    std::uint64_t gpu_memory_bytes = 0;
};

enum class EndOutcome { ended, killed, gone_before, reused, refused, survived };

// "ended" (by SIGTERM), "killed" (SIGKILL after the grace), "gone_before" (it ended by itself),
// "reused" (the pid is another process now: left alone), "refused" (the kernel said no), "survived".
const char* end_outcome_name(EndOutcome o);

struct EndResult {
    std::uint32_t pid = 0;
    EndOutcome outcome = EndOutcome::ended;
    std::string detail;  // the kernel's error, for refused
    std::uint64_t gpu_memory_bytes = 0;
};

// Ends `targets`; `proc_root` is read for start times.
std::vector<EndResult> end_processes(const std::vector<EndTarget>& targets, double grace_seconds,
                                     const std::string& proc_root = "/proc");

}  // namespace baton::clean
