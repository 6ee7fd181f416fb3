// The diagnosis engine: every rule over a window of snapshots. Pure: no I/O, no clock; the same
// window always gives the same findings, so each rule is tested on synthetic windows.
#pragma once

#include <string>
#include <vector>

#include "core/thresholds.hpp"
#include "diagnose/finding.hpp"
#include "diagnose/series.hpp"
#include "diagnose/steps.hpp"

namespace baton::diagnose {

// Findings of every rule, most severe first (then by rule id and subject). `steps`: the training
// steps the Python hook reported within the window, if any.
std::vector<Finding> diagnose(const Window& w, const Thresholds& t, const StepWindow& steps = {});

// Every rule id, in the order of docs/findings.md.
const std::vector<std::string>& rule_ids();

// The rule groups (rules_host.cpp, rules_gpu.cpp, rules_pipeline.cpp), appending to `out`.
void host_rules(const Window& w, const Thresholds& t, std::vector<Finding>& out);
void gpu_rules(const Window& w, const Thresholds& t, std::vector<Finding>& out);
void pipeline_rules(const Window& w, const Thresholds& t, const StepWindow& steps, std::vector<Finding>& out);
// rank_straggler (rules_ranks.cpp): one rank, or one GPU of a job, far from the others.
void rank_rules(const Window& w, const Thresholds& t, const StepWindow& steps, std::vector<Finding>& out);
// disk_space_low (rules_disk.cpp): a filesystem a job writes to, nearly full or filling fast.
void disk_space_low(const Window& w, const Thresholds& t, std::vector<Finding>& out);
// gpu_xid (rules_gpu_xid.cpp): the XIDs GPU `index` reported within the window.
void gpu_xid(const Window& w, unsigned index, std::vector<Finding>& out);
// The rules on the hook's step events (rules_steps.cpp), called by pipeline_rules.
void step_rules(const Window& w, const Thresholds& t, const StepWindow& steps, std::vector<Finding>& out);

// A finding with its doc link set.
Finding make_finding(const std::string& rule, Severity severity, std::string subject, std::string summary,
                     std::string recommendation);

}  // namespace baton::diagnose
