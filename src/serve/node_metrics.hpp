// The machine metrics baton serve keeps over time (its in-memory ring and the history database),
// taken from a Snapshot. Names are the snapshot's own fields (docs/snapshot-schema.md), subjects
// say what they are about: "host", "cpu:N", "gpu:N", "disk:NAME", "net:NAME". docs/api.md lists
// them.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "sample/snapshot.hpp"

namespace baton::serve {

// Calls `emit(metric, subject, value)` for every metric this snapshot has a value for.
// `per_core`: also each core's utilisation (kept in memory, not in the database: a 128-core box
// would write 128 series a minute for a view nobody looks at days later).
void for_each_metric(
    const Snapshot& s, bool per_core,
    const std::function<void(std::string_view metric, const std::string& subject, double value)>& emit);

// Whether `metric` is one for_each_metric() can give (the API tells an unknown metric apart from
// one without data).
bool known_metric(std::string_view metric);

}  // namespace baton::serve
