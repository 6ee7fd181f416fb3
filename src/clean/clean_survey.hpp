// One `baton clean` from the machine as it is now to what may be ended: a snapshot (every
// process read, none taken as idle: a zombie does not run), each process's facts, the run or
// job an ended owner was (from the history, when it recorded one), the leftovers and the ones
// baton clean may end; and what ending them came to.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "clean/ender.hpp"
#include "clean/leftovers.hpp"
#include "clean/process_facts.hpp"
#include "sample/sampler.hpp"
#include "sample/snapshot.hpp"
#include "store/history.hpp"

namespace baton::clean {

struct CleanSurvey {
    Snapshot snapshot;
    std::vector<Leftover> leftovers;  // most GPU memory first
    std::vector<EndTarget> targets;   // the endable ones, in that order
};

// Samples the machine and lists its leftovers under `filter`; `db_path`: the history that names
// ended owners (read only when it exists and is readable; "" or missing: unnamed).
CleanSurvey survey_leftovers(SamplerOptions sampler, const CleanFilter& filter, const std::string& db_path);

// Names each fact's ended owner from the history ("run 12 (resnet)"; "" when it recorded none).
void name_ended_owners(std::map<std::uint32_t, ProcessFacts>& facts, store::History& history);

// The leftovers baton clean may end, in the listed order.
std::vector<EndTarget> end_targets(const std::vector<Leftover>& leftovers);

struct EndTally {
    std::uint64_t gpu_memory_freed_bytes = 0;  // of the ones that are gone
    bool all_done = true;                      // each gone, or its pid reused (left alone)
};
EndTally tally_ends(const std::vector<EndResult>& ended);

}  // namespace baton::clean
