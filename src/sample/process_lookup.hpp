// The process with a given pid in a snapshot, and a process's job. Snapshot::processes is sorted by pid (the sampler's
// process table scans in pid order), so this is a binary search, cheap enough to call per GPU
// process per tick.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sample/snapshot.hpp"

namespace baton {

// Null when no process in `s` has that pid.
inline const ProcessInfo* find_process(const Snapshot& s, std::uint32_t pid) {
    auto it = std::lower_bound(s.processes.begin(), s.processes.end(), pid,
                               [](const ProcessInfo& p, std::uint32_t v) { return p.pid < v; });
    return it != s.processes.end() && it->pid == pid ? &*it : nullptr;
}

inline ProcessInfo* find_process(Snapshot& s, std::uint32_t pid) {
    return const_cast<ProcessInfo*>(find_process(static_cast<const Snapshot&>(s), pid));
}

// The job of a process in the snapshot's table (a handful of entries: a scan); null for none.
inline const JobInfo* find_job(const Snapshot& s, const JobRef& ref) {
    if (ref.kind == JobKind::none) return nullptr;
    for (const JobInfo& j : s.jobs)
        if (j.kind == ref.kind && j.id == ref.id) return &j;
    return nullptr;
}

}  // namespace baton
