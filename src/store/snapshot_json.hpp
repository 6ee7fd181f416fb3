// The JSON view of a Snapshot (docs/snapshot-schema.md). Field names are stable; an absent
// std::optional is an absent key, never 0.
#pragma once

#include <string>

#include "sample/snapshot.hpp"

namespace baton {

// Appends one compact JSON object (no trailing newline) to `out`.
void append_snapshot_json(const Snapshot& snap, std::string& out);

// Version of the schema written in every object as "schema_version".
inline constexpr int kSnapshotSchemaVersion = 1;

}  // namespace baton
