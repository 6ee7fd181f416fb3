// The profiler window of `baton run --profile` (issue 33, docs/profile.md): what baton run tells the
// Python hook (where the trace goes, how many steps to let pass and to record), the trace taken
// back once the hook says it is written (read only from the run's own profile directory: anyone
// may write to the hook's socket), judged, and why a run that asked for a window got none.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "diagnose/finding.hpp"
#include "profile/profile_rules.hpp"
#include "profile/step_breakdown.hpp"

namespace baton::run {

struct ProfileRequest {
    bool enabled = false;
    std::int64_t warmup = 10;  // steps let pass before the window ([profile] warmup)
    std::int64_t steps = 5;    // steps recorded (--profile=STEPS, [profile] steps)
    profile::ProfileRuleOptions rules;
};

// The variables the hook reads (python/baton/_profile.py): BATON_PROFILE_DIR, _WARMUP, _STEPS.
std::vector<std::pair<std::string, std::string>> profile_environment(const std::string& dir, const ProfileRequest& r);

// A window taken back: the trace's bytes as the hook wrote them (gzipped), its analysis and findings.
struct TakenProfile {
    std::string trace_gz;
    profile::Analysis analysis;
    std::vector<diagnose::Finding> findings;
};

// The trace at `path`, which must be a regular file directly in `dir` (not a link, at most 4 GiB),
// read, analysed and judged. Errors name the path and why.
Result<TakenProfile> take_profile(const std::string& dir, const std::string& path, const ProfileRequest& r);

// Why a run that asked for a window got none, from what the hook sent: no step at all (the script
// does not use baton.torch.watch), or fewer steps than the warm-up and the window.
std::string no_profile_note(std::int64_t steps_seen, const ProfileRequest& r);

}  // namespace baton::run
