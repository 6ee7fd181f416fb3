// Two recorded runs' findings matched to each other, for `baton compare`: "did it help?".
// Findings are matched by rule and a subject that means the same thing in both runs: "job" for
// the run's own processes (baton run records them so, pids differ between runs), a GPU by its
// UUID when both runs recorded it (else by index), a disk or interface by name, the host.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/history.hpp"

namespace baton::report {

struct FindingChange {
    enum class Status { gone, fresh, both };  // gone in run B, new in run B, in both
    std::string rule, subject;                // the subject as run B (or A, when gone) recorded it
    Status status = Status::both;
    std::string severity_a, severity_b;  // empty in the run without it
    // The metrics both runs' first sighting reported, with their window averages.
    struct Metric {
        std::string metric, label, unit;  // "steps.data_wait_percent", "data wait", "%"
        double a = 0, b = 0;
    };
    std::vector<Metric> evidence;
    // A host-wide load's share that each run's own job made (percent; absent where not recorded).
    std::optional<double> job_share_a, job_share_b;
    // Other processes' load, not the runs' doing: a share is known and every known share is below
    // the main-cause line (diagnose/host_load.hpp).
    bool others() const;
};

// Findings of `a` and `b` matched as above: those in both first (in b's order), then the new
// ones, then the gone ones. A host finding that other processes made (FindingChange::others) is
// matched the same way but is no effect of either run: the views list it apart.
std::vector<FindingChange> compare_findings(const store::StoredRun& a, const store::StoredRun& b);

// A metric's words and unit for people: "steps.data_wait_percent" -> {"data wait", "%"}.
std::pair<std::string, std::string> metric_label(const std::string& metric);

// "input_bound [job]: data wait 62 % -> 25 %, still present" (and "gone", "new"); for others():
// "cpu_load_high [host]: in the second run only, its job made 12 % of the load".
std::string finding_change_text(const FindingChange& c);

}  // namespace baton::report
