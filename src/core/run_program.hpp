// Running a program to its end with a deadline: its stdout and stderr apart, `input` on its stdin,
// its exit status the shell's way, killed (SIGKILL) past the deadline or past 64 MiB of output.
// For the short answers baton asks other programs for: Slurm's commands, Python's probe of
// PyTorch. Nothing is inherited but the environment; a program that exits without reading its
// input does not end this process with SIGPIPE.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace baton {

struct ProgramOutput {
    std::string out, err;
    int exit_status = 0;  // 128 + signal when killed; 127 when it could not be run (why: in err)
    bool timed_out = false;
};

// Errors: no program, no pipe, no fork. A program that is not there is exit status 127.
Result<ProgramOutput> run_program(const std::vector<std::string>& argv, const std::string& input,
                                  double timeout_seconds);

}  // namespace baton
