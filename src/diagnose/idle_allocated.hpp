// gpu_idle_allocated: a job that holds a GPU the scheduler gave it (Slurm's GRES, the kubelet's
// device allocation: Snapshot::jobs[].allocated_gpus) and leaves it at 0 % for `minutes` or more:
// the case Princeton's Job Defense Shield hunts on shared clusters, where an idle allocation keeps
// everyone else waiting. Longer than any diagnosis window, so it is a tracker fed every sample by
// the long-running agent (baton serve), not a rule over a window. Pure: the snapshots' times are
// its clock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "diagnose/finding.hpp"
#include "sample/snapshot.hpp"

namespace baton::diagnose {

class IdleAllocations {
  public:
    // Feeds the newest snapshot; returns the findings it holds (0 minutes: the check is off).
    std::vector<Finding> update(const Snapshot& s, double minutes);

  private:
    // (job label, GPU index) -> since when (Unix ms) the allocated GPU has read 0 %.
    std::map<std::pair<std::string, unsigned>, std::int64_t> idle_since_;
};

}  // namespace baton::diagnose
