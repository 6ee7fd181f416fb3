// Process trees as jobs: which processes belong together. A trainer and its DataLoader workers are
// one job; two users' trainings started from their shells are two, although both descend from sshd.
#pragma once

#include <cstdint>
#include <vector>

#include "sample/snapshot.hpp"

namespace baton::diagnose {

// The job a process belongs to, named by its topmost ancestor below the session level: walking
// up from `pid`, stop before init, a shell, a terminal multiplexer, sshd, sudo or a container
// shim. Unknown pids are their own job.
std::uint32_t job_root(const Snapshot& s, std::uint32_t pid);

// `pid` and all its descendants in the snapshot.
std::vector<const ProcessInfo*> process_and_descendants(const Snapshot& s, std::uint32_t pid);

// The processes with these pids and all their descendants, each once (a tree inside another, or a
// hostile parent cycle, is walked once): roots first, then breadth first.
std::vector<const ProcessInfo*> process_trees(const Snapshot& s, const std::vector<std::uint32_t>& roots);

// The tree of each root apart (out[i] for roots[i]; a process under two roots goes to the first),
// the process table walked once for them all: the queue's running jobs, every sample.
std::vector<std::vector<const ProcessInfo*>> process_tree_each(const Snapshot& s,
                                                               const std::vector<std::uint32_t>& roots);

}  // namespace baton::diagnose
