// The views of a profiled window (issue 33, docs/profile.md): the text `baton profile` prints (the
// mean step's breakdown per GPU and on the host, the steps one by one, where the host waited for
// the GPU, the top kernels and operators, the findings with their fixes) and its JSON.
#pragma once

#include <string>
#include <vector>

#include "diagnose/finding.hpp"
#include "profile/step_breakdown.hpp"

namespace baton::report {

struct ProfileInfo {
    std::string source;    // the trace's path, or "run N"
    std::size_t top = 10;  // rows of the kernel and operator tables
};

void append_profile_text(const ProfileInfo& info, const profile::Analysis& a,
                         const std::vector<diagnose::Finding>& findings, std::string& out);

// One JSON object (no trailing newline): docs/profile.md, "JSON output".
void append_profile_json(const ProfileInfo& info, const profile::Analysis& a,
                         const std::vector<diagnose::Finding>& findings, std::string& out);

}  // namespace baton::report
