// The JSON view of a Snapshot (docs/snapshot-schema.md). Field names are stable; an absent
// std::optional is an absent key, never 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/snapshot.hpp"

namespace baton::formats {

// Appends one compact JSON object (no trailing newline) to `out`.
void append_snapshot_json(const Snapshot& snap, std::string& out);

// The same, for a stream of snapshots: keeps each process's identity members (command
// line, user, start time, ...) encoded between calls, so a process that did not change is
// not escaped and formatted again. Output is identical to append_snapshot_json.
// Thread: one thread at a time.
class SnapshotJsonEncoder {
  public:
    void append(const Snapshot& snap, std::string& out);

    struct Identity {
        std::uint32_t pid = 0;
        bool filled = false;
        std::int64_t start_time_ms = 0;
        std::uint32_t uid = 0;
        std::optional<std::uint32_t> container_pid;
        std::string name, command, user, cgroup;
        std::string members;  // `"uid":...,"container_pid":...`, ready to copy
    };
    // One entry per process of the previous snapshot, in pid order like the snapshot's
    // process list, so that lookups are a merge walk, not a hash per process.
    using IdentityCache = std::vector<Identity>;

  private:
    IdentityCache cache_, next_;
};

// Version of the schema written in every object as "schema_version".
inline constexpr int kSnapshotSchemaVersion = 1;

}  // namespace baton::formats
