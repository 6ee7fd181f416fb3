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
#include "core/thresholds.hpp"
#include "diagnose/finding.hpp"
#include "diagnose/series.hpp"
#include "profile/profile_rules.hpp"
#include "profile/step_breakdown.hpp"

namespace baton::run {

struct ProfileRequest {
    bool enabled = false;
    // --profile=auto: no window at start; one when a finding a profile explains first fires
    // (explained_by_profile), at most once a run.
    bool automatic = false;
    std::int64_t warmup = 10;  // steps let pass before the window ([profile] warmup)
    std::int64_t steps = 5;    // steps recorded (--profile=STEPS, [profile] steps)
    profile::ProfileRuleOptions rules;
};

// The variables the hook reads (python/baton/_profile.py): BATON_PROFILE_DIR, _WARMUP, _STEPS; for
// --profile=auto, _TRIGGER (the file whose appearance starts the window, at the next step) and no
// warm-up of its own.
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

// The file that starts an automatic window, in the run's profile directory.
std::string profile_trigger_path(const std::string& dir);

// Whether a finding is one a profile explains (--profile=auto takes a window when one first fires):
// gpu_underused, step_time_unstable, input_bound. A GPU that is busy yet slow, steps that vary, a
// loop that waits: the trace says which kernel, sync or copy.
bool explained_by_profile(const diagnose::Finding& f);

// The other reason --profile=auto takes its window: one of the job's GPUs (`job_gpus`) reported busy
// on average (utilisation >= t.gpu_busy_percent over at least 5 samples of the window) while its
// SMs were mostly idle (SM activity below 50 %, where the GPU reports it): kernels that hold the
// GPU's timeline without filling it (short kernels, syncs). The sentence saying so, or "".
std::string busy_gpu_with_idle_sms(const diagnose::Window& w, const std::vector<unsigned>& job_gpus,
                                   const Thresholds& t);

// Starts the automatic window: creates the trigger file (once; an error when it cannot).
Status trigger_profile_window(const std::string& dir);

// Why a run that asked for a window got none, from what the hook sent: no step at all (the script
// does not use baton.torch.watch), fewer steps than the warm-up and the window, or (auto) no finding a
// profile explains fired, or the run ended after it did but before the window's end.
std::string no_profile_note(std::int64_t steps_seen, const ProfileRequest& r, bool triggered = false);

}  // namespace baton::run
