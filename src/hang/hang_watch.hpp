// When to look at a job's ranks and when their looks make a hang: the timing around the verdict
// (hang_verdict.hpp). Pure: the caller says the time, the hook's steps and hands in the looks it
// takes when asked (rank_probe.hpp).
//
// With the Python hook's steps: no look while steps come. Once no rank completed a step for
// hang_seconds (default: the larger of 60 s and 10 x the median step so far), two looks
// `confirm_seconds` apart judge it; while it lasts, one look every `period_seconds` follows (a verdict
// that changes is said again); a step clears it. A slow first step, a long evaluation or checkpoint on
// every rank: the looks find every rank working, and no verdict comes.
// Without steps (no hook, or none yet): one look every `period_seconds`, and a verdict when a rank's
// stack stayed the same across hang_seconds (in every look in between) while it waits; a later look
// that finds them all working clears it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

#include "hang/hang_verdict.hpp"

namespace baton::hang {

// The exit status of a job stopped on a hang (on_hang = "stop"), as timeout(1)'s.
inline constexpr int kExitHung = 124;

struct HangWatchOptions {
    double hang_seconds = 0;  // 0: the larger of 60 s and 10 x the median step
    double confirm_seconds = 5;
    double period_seconds = 10;
    bool multi_node = false;
};

class HangWatch {
  public:
    explicit HangWatch(HangWatchOptions o) : o_(o) {}

    // The hook's newest step (of any rank, unix ms) and the median step time so far (seconds).
    void steps(std::int64_t last_step_unix_ms, double median_step_seconds);
    // The ranks were started (again): what was seen of the last ones is dropped.
    void restart();

    // hang_seconds in force now.
    double hang_seconds() const;
    // Whether a look (with stacks) is due at `now` (monotonic seconds; `unix_ms`: the same instant).
    bool look_due(double now, std::int64_t unix_ms) const;

    struct Change {
        enum class Kind { appeared, changed, cleared } kind = Kind::appeared;
        std::optional<HangVerdict> verdict;  // none when cleared
    };
    // A look taken when due. A change of the verdict (a new one, a different one, or its end).
    std::optional<Change> add_look(Look look);
    // The newest look changed by `amend` (what came later about that moment: the Flight Recorder's
    // dumps), judged again. Nothing when there is no look.
    std::optional<Change> amend_newest(const std::function<void(Look&)>& amend);

    const std::optional<HangVerdict>& verdict() const { return verdict_; }

  private:
    bool quiet_for(std::int64_t unix_ms, double seconds) const;
    std::optional<Change> settle(std::optional<HangVerdict> v);
    std::optional<HangVerdict> judge_without_steps() const;

    HangWatchOptions o_;
    std::int64_t last_step_ms_ = 0;  // 0: no step seen since the (re)start
    std::int64_t verdict_step_ms_ = 0;
    double median_step_ = 0;
    std::deque<Look> looks_;  // the recent looks, oldest first
    std::optional<HangVerdict> verdict_;
};

}  // namespace baton::hang
