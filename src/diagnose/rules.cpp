#include "diagnose/rules.hpp"

#include <algorithm>

#include "diagnose/finding_jobs.hpp"

namespace baton::diagnose {

const std::vector<std::string>& rule_ids() {
    static const std::vector<std::string> ids = {
        "gpu_memory_high",     "cpu_load_high",   "swap_active",
        "io_wait_high",        "input_bound",     "io_bound",
        "gpu_memory_near_oom", "gpu_underused",   "gpu_idle_held",
        "gpu_contention",      "swap_thrash",     "host_memory_pressure",
        "cpu_oversubscribed",  "shm_low",         "gpu_throttled",
        "pcie_degraded",       "gpu_memory_leak", "gpu_hardware_errors",
        "step_time_unstable",  "gpu_lost",        "gpu_xid",
        "rank_straggler",
        "gpu_idle_allocated",  // the agent's tracker (idle_allocated.hpp), not a rule over a window
        "disk_space_low",
    };
    return ids;
}

Finding make_finding(const std::string& rule, Severity severity, std::string subject, std::string summary,
                     std::string recommendation) {
    Finding f;
    f.rule = rule;
    f.severity = severity;
    f.subject = std::move(subject);
    f.summary = std::move(summary);
    f.recommendation = std::move(recommendation);
    f.doc = "docs/findings.md#" + rule;
    return f;
}

std::vector<Finding> diagnose(const Window& w, const Thresholds& t, const StepWindow& steps) {
    std::vector<Finding> out;
    if (w.empty()) return out;
    host_rules(w, t, out);
    gpu_rules(w, t, out);
    pipeline_rules(w, t, steps, out);
    rank_rules(w, t, steps, out);
    name_jobs(out, w.back());
    std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
        if (a.severity != b.severity) return a.severity > b.severity;
        if (a.rule != b.rule) return a.rule < b.rule;
        return a.subject < b.subject;
    });
    return out;
}

}  // namespace baton::diagnose
