// The views of `baton clean`: the leftovers as a table (each with why it is listed and, when it is
// not baton clean's to end, why it is left alone), the line per ended process, and the one JSON
// object of --json (docs/cli.md).
#pragma once

#include <string>
#include <vector>

#include "clean/clean_survey.hpp"

namespace baton::report {

// PID, USER, AGE, GPU MEM, KIND, COMMAND, then the reason (and "left alone: ...") under each.
std::string leftovers_table(const std::vector<clean::Leftover>& leftovers);

// What became of each ended process, one line each ("pid 41: killed (SIGKILL after 5 s)"), then
// "GPU memory freed: ...".
std::string end_lines(const std::vector<clean::EndResult>& ended, double grace_seconds, const clean::EndTally& tally);

// {"dry_run", "leftovers": [...], "ended": [...], "gpu_memory_freed_bytes"} and a newline.
std::string clean_json(const std::vector<clean::Leftover>& leftovers, const std::vector<clean::EndResult>& ended,
                       bool dry_run, const clean::EndTally& tally);

}  // namespace baton::report
