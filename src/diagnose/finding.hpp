// A Finding: what a diagnosis rule concluded, with the numbers that prove it and the fix.
// Rule ids are part of baton's interface (docs/findings.md has one section per id).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace baton::diagnose {

enum class Severity { info, warning, critical };

// "info", "warning", "critical".
const char* severity_name(Severity s);

// One metric's behaviour over the window, against the threshold it was judged by.
struct Evidence {
    std::string metric;  // e.g. "gpu.utilization_percent"
    // Absent for a condition counted per sample (e.g. "throttled while busy"): then only
    // breach_share and samples say how often it held.
    std::optional<double> average, minimum, maximum;
    std::string threshold;               // e.g. "> 90", "< 50"
    std::optional<double> breach_share;  // share of the samples that breached, 0..1
    std::size_t samples = 0;
};

struct Finding {
    std::string rule;  // stable id, e.g. "input_bound"
    Severity severity = Severity::info;
    std::string subject;  // "host", "gpu:0", "pid:1234", "disk:nvme0n1"
    // The job behind the subject, where one is known: "slurm:1234", "pod:ns/name" (finding_jobs.hpp).
    std::string job;
    std::string summary;  // one line
    std::vector<Evidence> evidence;
    std::string recommendation;
    std::optional<std::string> snippet;  // code or shell to paste
    std::string doc;                     // "docs/findings.md#input_bound"
};

}  // namespace baton::diagnose
