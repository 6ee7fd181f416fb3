// A look at a job's ranks for the hang verdict: each rank's process state and the kernel function it
// sleeps in, the CPU time of it and all its descendants, and (when asked) its main thread's stack
// through its stack handler. The part of the verdict that reads /proc and signals.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

#include "hang/hang_verdict.hpp"

namespace baton::hang {

// A rank as its launcher knows it.
struct ProbedRank {
    int rank = 0;
    pid_t pid = 0;
    bool alive = true;
    int exit_status = 0;
    std::int64_t exited_unix_ms = 0;
};

// The look at `ranks` now (`at`: monotonic seconds). `stacks`: ask the live ranks for their stacks
// (at most `timeout_seconds`), else the look has their states and CPU only.
Look look_at_ranks(const std::vector<ProbedRank>& ranks, bool stacks, double at, double timeout_seconds = 2,
                   const std::string& proc_root = "/proc");

}  // namespace baton::hang
