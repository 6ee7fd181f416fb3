// The hang verdict: two looks at a job's ranks some seconds apart (each rank's main-thread stack, its
// process state, the CPU time of it and its children), judged. Each rank is told apart as waiting in
// a collective, blocked elsewhere (no CPU, the same stack), running (its stack moves), busy in one
// place (the same stack, CPU), stuck in the kernel (state D), stopped, exited or silent; the job hangs
// when some rank waits and the ranks that do not are named for what they do, and desyncs when the
// waiting ranks wait in different collectives. Pure: the looks are taken by rank_probe.hpp, the
// timing (when to look) is hang_watch.hpp's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "diagnose/finding.hpp"
#include "hang/flight_recorder.hpp"
#include "hang/python_stacks.hpp"

namespace baton::hang {

// One rank at one moment.
struct RankLook {
    int rank = 0;
    pid_t pid = 0;
    bool alive = true;
    int exit_status = 0;  // when it exited
    std::int64_t exited_unix_ms = 0;
    char state = '?';             // /proc/PID/stat
    std::string wchan;            // the kernel function it sleeps in, when /proc says
    double cpu_seconds = 0;       // user + system, the rank and its descendants (workers, compilers)
    bool has_stacks = false;      // its dump came
    std::vector<PyFrame> frames;  // its main thread, innermost first
    std::string no_stacks;        // why no dump came
    // Its oldest collective that did not complete, from its Flight Recorder dump (when one came):
    // with NCCL a rank waits for a collective wherever it next synchronises (`loss.item()`), not in
    // the call, so its stack alone does not say it waits.
    std::optional<FrEntry> fr_pending;
};

struct Look {
    double at = 0;  // monotonic seconds
    std::int64_t unix_ms = 0;
    std::vector<RankLook> ranks;  // the same ranks in both looks of a judgement
    // The judgement of the ranks' Flight Recorder dumps taken with this look, or why there is none
    // ("" when none was asked for).
    std::optional<FrVerdict> flight_recorder;
    std::string flight_recorder_none;
};

enum class RankCondition {
    waiting_in_collective,  // the same stack in a torch.distributed call (or DDP's backward)
    blocked,                // the same stack elsewhere, no CPU: a lock, a pipe, input, a queue
    running,                // its stack moved
    busy_in_place,          // the same stack, using CPU: a loop on one line, a long call
    in_kernel,              // state D at both looks
    stopped,                // state T
    exited,
    silent,  // no stacks to judge by (the reason is kept)
};

// "waiting_in_collective", ...
const char* condition_name(RankCondition c);

struct RankVerdict {
    int rank = 0;
    pid_t pid = 0;
    RankCondition condition = RankCondition::silent;
    double cpu_cores = 0;  // CPU time between the looks over their interval (1 = one core)
    std::vector<PyFrame> frames;
    std::string collective;        // collective_of(frames), or the pending collective of its Flight Recorder
    std::optional<PyFrame> where;  // user_frame(frames), or where that collective was called
    char state = '?';
    std::string wchan, no_stacks;
    int exit_status = 0;
    std::int64_t exited_unix_ms = 0;
};

struct HangVerdict {
    // "rank_hang", or "rank_desync" when the waiting ranks wait in different collectives (or the
    // Flight Recorder finds a rank missing from one, or ranks in different ones)
    std::string rule;
    std::string summary;  // the one sentence: who, where, since when, what it means
    // The Flight Recorder's sentence (also at the end of the summary), or "stacks only: WHY" when
    // no dump could be judged; "" when none was asked for.
    std::string flight_recorder;
    std::vector<RankVerdict> ranks;  // by rank
    std::int64_t since_unix_ms = 0;
    // What makes two verdicts the same one (the conditions, collectives and places): said again only
    // when it changes.
    std::string key;
};

// A job of one node or several (`multi_node`: the rank the local ones wait for may be elsewhere).
// A rank whose stack stayed put (or gave none) while its Flight Recorder has a collective pending
// since before the first look waits in that collective; `after`'s Flight Recorder judgement ends
// the summary, and makes it a rank_desync when it finds one.
// `since_unix_ms`: the ranks' last progress seen (their last step; without steps, the last look at
// which a stuck rank's stack was elsewhere); `since_first_look`: none was seen, it is the first look,
// and the summary says "since at least". nullopt: no hang (no rank waits, or every rank runs or
// computes: an evaluation or a checkpoint on every rank is no hang).
std::optional<HangVerdict> judge_hang(const Look& before, const Look& after, std::int64_t since_unix_ms,
                                      bool multi_node, bool since_first_look = false);

// The verdict as a finding (critical, subject "job"): its summary, each rank's CPU as evidence, the
// usual causes and what to do as the recommendation, `baton stacks` as the snippet.
diagnose::Finding hang_finding(const HangVerdict& v, double hang_seconds);

// The block printed when a verdict appears or changes: the sentence, then the ranks' stacks
// grouped (as `baton stacks` shows them).
std::string hang_text(const HangVerdict& v, const std::string& who);

}  // namespace baton::hang
