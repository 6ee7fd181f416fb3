// `baton clean`: what holds GPUs or memory for nothing, judged from a snapshot and a few facts per
// process. Pure: the facts (process groups, start times, the owners named in environments and
// whether they live) are gathered by process_facts.hpp. Never by name: a process is listed for
// what it is (orphaned with GPU memory, left by a baton that ended, defunct), not for what it is called.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sample/snapshot.hpp"

namespace baton::clean {

// What /proc says of a process beyond the snapshot.
struct ProcessFacts {
    std::uint32_t pgid = 0, sid = 0;
    std::uint64_t start_ticks = 0;
    std::optional<std::int64_t> owner_pid;  // BATON_OWNER in its environment (a baton run, launch or queue job)
    std::uint64_t owner_start_ticks = 0;
    bool owner_alive = true;     // that owner still runs
    std::string owner_label;     // what the history says the owner was: "run 12 (resnet)"
    bool launched_rank = false;  // torchrun's or baton launch's variables (TORCHELASTIC_RUN_ID)
};

enum class LeftoverKind { gpu_orphan, baton_leftover, defunct, not_reaping };

// "gpu_orphan", "baton_leftover", "defunct", "not_reaping".
const char* leftover_kind_name(LeftoverKind k);

struct Leftover {
    LeftoverKind kind = LeftoverKind::gpu_orphan;
    std::uint32_t pid = 0, ppid = 0, uid = 0;
    std::uint64_t start_ticks = 0;  // re-checked before every signal
    std::string user, name, command;
    double age_seconds = 0;
    std::uint64_t gpu_memory_bytes = 0;
    std::vector<unsigned> gpus;
    std::string reason;      // why it is listed, one line
    bool endable = false;    // baton clean may end it: the caller's own (root: anyone's), not defunct
    std::string left_alone;  // when not endable: why
};

struct CleanFilter {
    std::uint32_t caller_uid = 0;
    std::uint32_t caller_pid = 0;   // baton clean itself and its ancestors are never listed
    std::optional<unsigned> gpu;    // --gpu N: only what holds that GPU
    double older_than_seconds = 0;  // --older-than
};

// The leftovers in `snap`, most GPU memory first.
std::vector<Leftover> find_leftovers(const Snapshot& snap, const std::map<std::uint32_t, ProcessFacts>& facts,
                                     const CleanFilter& filter);

}  // namespace baton::clean
