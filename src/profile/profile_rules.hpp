// The profile's findings (issue 33): what a trace's step breakdown says to change, each with the
// milliseconds per step it costs, its share of the step, the evidence and a fix to paste
// (docs/findings.md has one section per id: launch_bound, sync_in_step, pageable_copy, fp32_matmul,
// comm_exposed, data_in_step). A finding whose cost is under `min_share` of the step is not
// raised: the user fixes the biggest first, and small ones are noise in a five-step window. Pure.
#pragma once

#include <string>
#include <vector>

#include "diagnose/finding.hpp"
#include "profile/step_breakdown.hpp"

namespace baton::profile {

struct ProfileRuleOptions {
    double min_share = 0.05;  // [profile] min_share
    unsigned cpus = 0;        // the cores the training had, for the DataLoader advice; 0: unknown
    // data_in_step is input_bound's symptom seen in a trace: it takes input_bound's scale, [thresholds]
    // data_wait_percent and data_wait_warning_percent, as shares of the step.
    double data_wait_share = 0.05, data_wait_warning_share = 0.15;
};

// The rule ids, in the order of docs/findings.md.
const std::vector<std::string>& profile_rule_ids();

// Findings, most costly first.
std::vector<diagnose::Finding> judge_profile(const Analysis& a, const ProfileRuleOptions& o = {});

}  // namespace baton::profile
