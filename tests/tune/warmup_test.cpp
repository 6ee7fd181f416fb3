#include "tune/warmup.hpp"

#include <gtest/gtest.h>

using namespace baton::tune;

namespace {

std::vector<TrialStep> steps_of(const std::vector<double>& ms) {
    std::vector<TrialStep> out;
    for (double m : ms) out.push_back({m, m / 2, 4});
    return out;
}

}  // namespace

TEST(TuneWarmup, TheSlowFirstStepsAreFoundFromTheStepTimes) {
    // Worker start-up, then a few slow steps while caches warm, then steady steps of about 10 ms.
    std::vector<double> ms = {900, 60, 40, 25, 12};
    for (int i = 0; i < 20; ++i) ms.push_back(i % 3 ? 10 : 11);
    auto w = find_warmup(steps_of(ms));
    ASSERT_TRUE(w);
    EXPECT_TRUE(w->settled);
    EXPECT_GE(w->first, 3u);
    EXPECT_LE(w->first, 5u);
    // Not enough steps yet to tell.
    EXPECT_FALSE(find_warmup(steps_of({900, 60, 40, 25, 12, 10, 10, 10, 10, 10, 10, 10})));
}

TEST(TuneWarmup, StepsThatAreSteadyFromTheSecondNeedNoMore) {
    std::vector<double> ms = {300};
    for (int i = 0; i < 20; ++i) ms.push_back(10);
    auto w = find_warmup(steps_of(ms));
    ASSERT_TRUE(w);
    EXPECT_EQ(w->first, 1u);
}

TEST(TuneWarmup, WorkersThatHandOverInBurstsAreSteady) {
    // Two workers: a step that waits for a batch, then one whose batch was ready.
    std::vector<double> ms = {400};
    for (int i = 0; i < 40; ++i) ms.push_back(i % 2 ? 0.3 : 12.0);
    auto w = find_warmup(steps_of(ms));
    ASSERT_TRUE(w);
    EXPECT_TRUE(w->settled);
    EXPECT_EQ(w->first, 1u);
}

TEST(TuneWarmup, StepTimesThatNeverSettleAreMeasuredAsTheyAre) {
    // Each step 3 % slower than the last (a leak): neighbouring windows of 10 always differ by a third.
    std::vector<double> ms;
    double m = 10;
    for (int i = 0; i < 80; ++i, m *= 1.03) ms.push_back(m);
    auto w = find_warmup(steps_of(ms));
    ASSERT_TRUE(w);
    EXPECT_FALSE(w->settled);
    EXPECT_EQ(w->first, 26u);
    EXPECT_FALSE(find_warmup(steps_of(std::vector<double>(ms.begin(), ms.begin() + 79))));
    // A script that ended before: its last two thirds.
    auto end = warmup_at_end(steps_of(std::vector<double>(ms.begin(), ms.begin() + 30)));
    ASSERT_TRUE(end);
    EXPECT_EQ(end->first, 10u);
    EXPECT_FALSE(end->settled);
    EXPECT_FALSE(warmup_at_end(steps_of({100, 10, 10})));
}

TEST(TuneWarmup, TheMeasureIsTheStepsOverTheirSummedTime) {
    std::vector<TrialStep> steps = {{1000, 0, 4}, {10, 5, 4}, {10, 5, 4}, {20, 10, 4}, {10, 0, std::nullopt}};
    TrialMeasure m = measure(steps, 1, 3);
    EXPECT_EQ(m.steps, 3u);
    EXPECT_DOUBLE_EQ(m.steps_per_second, 3 * 1000.0 / 40);
    ASSERT_TRUE(m.samples_per_second);
    EXPECT_DOUBLE_EQ(*m.samples_per_second, 12 * 1000.0 / 40);
    EXPECT_DOUBLE_EQ(m.data_wait_share, 0.5);
    EXPECT_DOUBLE_EQ(m.median_step_ms, 10);
    // A step that did not say its samples: no samples/s.
    EXPECT_FALSE(measure(steps, 1, 10).samples_per_second);
    EXPECT_EQ(measure(steps, 9, 3).steps, 0u);
}
