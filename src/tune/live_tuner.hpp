// `baton run --tune-live`: the DataLoader's workers and prefetch tuned while the run runs, as tf.data's
// AUTOTUNE does for its pipelines. When the step waits for data and the CPUs have room, it asks for more
// workers (then a deeper prefetch) at the next epoch's start (a new iterator: never mid-epoch); when the
// CPUs are saturated and the loop no longer waits, it asks for fewer. Each change is measured over the
// steps after it against the steps before it, kept when it gained beyond kMinGain, undone when not, and
// the tuning stops once a change did not help. Settings that change numerics are never touched. Pure:
// the run feeds it steps, the hook's facts and the CPUs' load, and asks what to do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tune/candidates.hpp"
#include "tune/warmup.hpp"

namespace baton::tune {

struct LiveSetting {
    int num_workers = 0;
    int prefetch_factor = 2;
    bool operator==(const LiveSetting&) const = default;
};

// "num_workers=4 prefetch_factor=2".
std::string live_label(const LiveSetting& s);

class LiveTuner {
  public:
    static constexpr std::size_t kSettleSteps = 5;    // after a change: worker start-up, not its effect
    static constexpr std::size_t kPhaseSteps = 30;    // measured per setting before judging it
    static constexpr double kMinGain = 0.05;          // a change must gain this much to be kept
    static constexpr double kWaitWorthTuning = 0.10;  // of the step

    explicit LiveTuner(unsigned cpus);

    // The training loader as the hook made it: the starting point.
    void loader(const LoaderFacts& f);
    // One step of the lowest rank.
    void step(const TrialStep& s);
    // The CPUs' busy share (0..1) over the last sample.
    void cpu_busy(double share);
    // The hook applied `s` at an epoch's start.
    void applied(const LiveSetting& s);

    // The setting to ask of the hook now, if any (asked once; the next comes after it was applied and
    // measured).
    std::optional<LiveSetting> decide();
    // What happened since the last call, one line each ("num_workers 0 -> 2 at step 96: 76 -> 150 steps/s
    // (+98 %), data wait 97 % -> 94 %").
    std::vector<std::string> take_lines();
    // Every change said, for the summary.
    const std::vector<std::string>& history() const { return history_; }
    bool done() const { return done_; }

  private:
    struct Phase {
        LiveSetting setting;
        std::int64_t from_step = 0;  // the step count when it began
        std::vector<TrialStep> steps;
        TrialMeasure measure() const;
        bool steady() const;
    };
    void say(std::string line);
    std::optional<LiveSetting> next_from(const Phase& p) const;

    unsigned cpus_;
    std::optional<Phase> current_, previous_;
    std::optional<LiveSetting> asked_;
    bool reverting_ = false, done_ = false;
    double cpu_busy_ = 0;
    std::int64_t steps_ = 0;
    std::vector<std::string> lines_, history_;
};

}  // namespace baton::tune
