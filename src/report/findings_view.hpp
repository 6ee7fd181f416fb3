// The views of a diagnosis: the text `baton diagnose` prints, and its JSON (docs/findings.md,
// "JSON output").
#pragma once

#include <string>
#include <vector>

#include "diagnose/finding.hpp"
#include "diagnose/indicators.hpp"

namespace baton::report {

// What was judged: the window's extent and source.
struct DiagnosisInfo {
    std::string source;  // "live" or the replayed file
    std::string hostname;
    std::size_t snapshots = 0;
    double seconds = 0;  // from the first snapshot to the last
    std::int64_t start_unix_ms = 0, end_unix_ms = 0;
    unsigned gpus = 0;
    // Why the GPUs could not be read at the last snapshot ("" when they could, or when the
    // machine has no NVIDIA driver): a hung driver must not look like a healthy GPU-less box.
    std::string gpu_problem;
};

// The info of a window of snapshots (not empty), judged from `source`.
DiagnosisInfo diagnosis_info(const std::vector<Snapshot>& window, std::string source);

// Findings ranked as given (most severe first), each with evidence, fix, snippet and doc link;
// then the indicator table; then the verdict line.
void append_findings_text(const DiagnosisInfo& info, const std::vector<diagnose::Finding>& findings,
                          const std::vector<diagnose::IndicatorSummary>& indicators, std::string& out);

// One JSON object (no trailing newline).
void append_findings_json(const DiagnosisInfo& info, const std::vector<diagnose::Finding>& findings,
                          const std::vector<diagnose::IndicatorSummary>& indicators, std::string& out);

// The exit status of `baton diagnose` for these findings: 0 nothing above info, 1 a warning, 2 a
// critical finding.
int diagnosis_exit_status(const std::vector<diagnose::Finding>& findings);

}  // namespace baton::report
