// Asking the processes of a job for their Python stacks: find the ones with baton's stack handler
// (stack_shim.hpp) and check it against the live process, signal them all at once, wait for each
// dump to be complete, parse it (python_stacks.hpp). What `baton stacks` and the hang verdict use.
// A process is only signalled when its handler's file names that very process (pid, start time,
// executable): the signal's default action would end it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "core/result.hpp"
#include "hang/python_stacks.hpp"

namespace baton::hang {

// A process that has a stack handler.
struct StackTarget {
    pid_t pid = 0;
    pid_t ppid = 0;
    std::uint64_t start_ticks = 0;
    std::string name;         // its comm
    std::optional<int> rank;  // RANK in its environment (torchrun's variable)
    std::string file;         // BATON_STACKS_DIR/PID.txt
    std::size_t header_bytes = 0;
    int signal = 0;
};

// The process `pid` if it has a handler. Errors, one line each: not_found ("no process 123",
// "process 123 has exited"), permission_denied (another user's process, or its environment cannot be
// read), failed (not a Python process; a Python process without the handler, and why it may lack it).
Result<StackTarget> find_stack_target(pid_t pid, const std::string& proc_root = "/proc");

// `root` and its descendants that have a handler, by rank then pid. `ranks_only`: when some of them
// have a RANK, only the topmost process of each rank (a rank's DataLoader workers and compile
// workers inherit its RANK; torchrun's own agent has none).
std::vector<StackTarget> stack_targets_under(pid_t root, bool ranks_only, const std::string& proc_root = "/proc");

struct StackReply {
    StackTarget target;
    std::vector<PyThreadStack> threads;  // the dump; empty when none came
    bool partial = false;                // the dump was still growing at the deadline
    char state = '?';                    // the process's state after the wait (/proc/PID/stat)
    std::string error;                   // why no dump came; "" when it did
    double seconds = 0;                  // from the signal to the complete dump
};

// Signals every target at once and waits, at most `timeout_seconds` in all, for each dump to be
// complete (its file unchanged for 40 ms). A process that cannot take the signal says why: in the
// kernel (state D: the dump comes when the call returns), stopped (state T), exited. Replies are in
// the targets' order.
std::vector<StackReply> request_stacks(const std::vector<StackTarget>& targets, double timeout_seconds = 2,
                                       const std::string& proc_root = "/proc");

}  // namespace baton::hang
