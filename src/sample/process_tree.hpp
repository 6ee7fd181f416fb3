// ProcessTree: parent/child links over one snapshot's processes, so that a trainer and its
// DataLoader workers can be summed as one job.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sample/snapshot.hpp"

namespace baton {

class ProcessTree {
  public:
    // Indexes `processes` (which must outlive the tree and not change while it is used).
    explicit ProcessTree(const std::vector<ProcessInfo>& processes);

    // Direct children of `pid`, as indices into the process vector.
    const std::vector<std::size_t>& children(std::uint32_t pid) const;

    // Every descendant of `pid` (children, their children, ...), depth first. Safe on
    // cycles (impossible in a real /proc, possible in a hostile fixture).
    std::vector<std::size_t> descendants(std::uint32_t pid) const;

    // Sums over `pid` and all its descendants.
    struct Totals {
        std::size_t processes = 0;
        double cpu_percent = 0;
        std::uint64_t rss_bytes = 0;
        std::uint64_t gpu_memory_bytes = 0;
    };
    Totals subtree_totals(std::uint32_t pid) const;

  private:
    const std::vector<ProcessInfo>& procs_;
    std::unordered_map<std::uint32_t, std::size_t> index_;
    std::unordered_map<std::uint32_t, std::vector<std::size_t>> children_;
};

}  // namespace baton
