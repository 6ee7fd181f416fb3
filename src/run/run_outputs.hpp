// What `baton run` and `baton launch` write when a job ends, besides the summary on stderr: the HTML
// report (--report, read back from the history, so it shows exactly what `baton report` would) and
// the summary JSON (--summary-json).
#pragma once

#include <string>
#include <string_view>

#include "run/run_command.hpp"

namespace baton::run {

// Writes the outputs asked for (an empty path: not asked). Returns the summary's lines about them
// ("  report: FILE", "  report: not written: WHY"); `what` is "run" or "launch".
std::string write_run_outputs(const RunStats& stats, const std::string& db_path, const std::string& report,
                              const std::string& summary_json, std::string_view what);

}  // namespace baton::run
