// When a trial's steps have settled and what its measured steps say: `baton tune` measures N steps
// after a warm-up found from the step times themselves (worker start-up, cuDNN's autotuning, the
// allocator growing and the first epoch's cold page cache make the first steps slow, and how many
// differs from script to script), never after a fixed count. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace baton::tune {

// A step as a trial sees it (one rank's: the trial's rank 0, or its only process).
struct TrialStep {
    double step_ms = 0, wait_ms = 0;
    std::optional<std::int64_t> samples;
};

// Windows are compared by their mean step time, the statistic the measure itself uses: DataLoader
// workers hand batches over in bursts (with 2 workers a fast and a slow step alternate), which moves a
// median of a few steps by half while the throughput stays put; 10 steps hold whole periods of 1, 2
// and 5 workers.
struct WarmupRule {
    std::size_t window = 10;   // steps per window compared
    double tolerance = 0.15;   // two windows agree when their means differ by at most this share
    std::size_t give_up = 80;  // steps after which the step times are taken as they are
};

// The index of the first measured step: the first i >= 1 (step 0 holds the start-up) where the
// mean of steps [i, i+window) is within `tolerance` of the mean of [i+window, i+2*window);
// nullopt while none is (more steps are needed). Once `give_up` steps came with none, a third of
// them: step times that never settle are measured as they are (Warmup::settled says so).
struct Warmup {
    std::size_t first = 0;
    bool settled = true;
};
std::optional<Warmup> find_warmup(const std::vector<TrialStep>& steps, const WarmupRule& rule = {});
// For a script that ended by itself: its warm-up, or when its steps never settled before the end, its
// last two thirds (at least 3 steps after the first), not settled; nullopt with fewer than 4 steps.
std::optional<Warmup> warmup_at_end(const std::vector<TrialStep>& steps, const WarmupRule& rule = {});

// What a trial measured over its steps [first, first + count).
struct TrialMeasure {
    std::size_t steps = 0;
    double steps_per_second = 0;               // count over their summed time
    std::optional<double> samples_per_second;  // when every measured step said its samples
    double data_wait_share = 0;                // of the summed step time
    double median_step_ms = 0;
};
TrialMeasure measure(const std::vector<TrialStep>& steps, std::size_t first, std::size_t count);

}  // namespace baton::tune
