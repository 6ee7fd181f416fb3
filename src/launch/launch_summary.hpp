// The text `baton launch` prints on stderr when the launch ends: the first failure's root cause,
// the run's summary (as `baton run` prints it), then the launch's own lines: its ranks, attempts,
// logs, and any process left in a state SIGKILL could not end.
#pragma once

#include <string>

#include "launch/launcher.hpp"

namespace baton::launch {

std::string launch_summary_text(const LaunchResult& r, const LaunchTopology& t);

}  // namespace baton::launch
