// `baton run --tune-live`: a LiveTuner (live_tuner.hpp) wired to the run as a run::LiveControl: the
// hook's steps, training loader and applied settings in; what it asks written to the control file the
// hook reads at each epoch's start; each change said on stderr and given to the run as an info finding
// (`live_tune`), so the history keeps it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "run/run_command.hpp"
#include "tune/live_tuner.hpp"

namespace baton::tune {

// `control_file`: where the hook reads what to apply (its directory must exist). The tuner is shared
// with the callbacks: read it after the run for its history.
run::LiveControl live_control(const std::string& control_file, std::shared_ptr<LiveTuner> tuner);

// The hook's "live" event: what it applied; none when malformed.
std::optional<LiveSetting> live_setting_of(const std::string& body);

}  // namespace baton::tune
