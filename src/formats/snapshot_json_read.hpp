// Reading snapshots back from their JSON view (docs/snapshot-schema.md): what `baton diagnose
// --replay` judges. Every key the writer writes is read; unknown keys are ignored (a newer baton
// may add some); a wrong type or a missing required key is an error naming the key.
#pragma once

#include <istream>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "diagnose/series.hpp"
#include "sample/snapshot.hpp"

namespace baton::formats {

Result<Snapshot> parse_snapshot_json(std::string_view text);

// JSON Lines of snapshots (blank lines skipped) -> the window `baton diagnose --replay` judges;
// the first bad line is an error naming `name:LINE`. Snapshots are ordered by the monotonic
// clock: the wall clock may step back (NTP) within one recording. A recording made before baton
// wrote `monotonic_seconds` gets one made from its `interval_seconds` (each snapshot's rates were
// measured over the monotonic time since the one before it), so it is judged across a wall-clock
// step too. A clock going back is a file put together from several recordings and is refused:
// `monotonic_seconds` going back, or, in an older recording, the host's uptime (CLOCK_BOOTTIME,
// which never steps) going back.
Result<diagnose::Window> read_snapshot_stream(std::istream& in, const std::string& name);

}  // namespace baton::formats
