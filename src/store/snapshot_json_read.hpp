// Reading snapshots back from their JSON view (docs/snapshot-schema.md): what `baton diagnose
// --replay` judges. Every key the writer writes is read; unknown keys are ignored (a newer baton
// may add some); a wrong type or a missing required key is an error naming the key.
#pragma once

#include <string_view>

#include "core/result.hpp"
#include "sample/snapshot.hpp"

namespace baton {

Result<Snapshot> parse_snapshot_json(std::string_view text);

}  // namespace baton
