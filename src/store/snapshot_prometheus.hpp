// The Prometheus text exposition (format 0.0.4) view of a Snapshot. Names are baton_* in
// base units (bytes, seconds, hertz, ratios 0..1); documented in docs/snapshot-schema.md.
// Absent values produce no sample. Checked by `promtool check metrics` in the tests.
#pragma once

#include <string>

#include "sample/snapshot.hpp"

namespace baton {

void append_snapshot_prometheus(const Snapshot& snap, std::string& out);

}  // namespace baton
