// The readable summary that `baton snapshot` prints without --json: a few lines for the
// machine, one per GPU, and the busiest processes.
#pragma once

#include <string>

#include "sample/snapshot.hpp"

namespace baton::report {

struct TextOptions {
    std::size_t top_processes = 10;  // processes listed, by GPU memory then CPU
};

void append_snapshot_text(const Snapshot& snap, const TextOptions& options, std::string& out);

// "1.5 GiB", "312 MiB", "12 KiB", "900 B".
std::string human_bytes(double bytes);

}  // namespace baton::report
