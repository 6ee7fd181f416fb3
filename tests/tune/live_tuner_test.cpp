#include "tune/live_tuner.hpp"

#include <gtest/gtest.h>

using namespace baton::tune;

namespace {

// `n` steps of `ms`, of which `wait_ms` waiting for data.
void steps(LiveTuner& t, std::size_t n, double ms, double wait_ms) {
    for (std::size_t i = 0; i < n; ++i) t.step({ms, wait_ms, 4});
}

LoaderFacts workers(int n) {
    LoaderFacts f;
    f.num_workers = n;
    f.prefetch_factor = 2;
    return f;
}

constexpr std::size_t kPhase = LiveTuner::kSettleSteps + LiveTuner::kPhaseSteps;

}  // namespace

TEST(LiveTuner, WaitingForDataRaisesTheWorkersKeepsWhatHelpsAndUndoesWhatDoesNot) {
    LiveTuner t(4);
    t.loader(workers(0));
    t.cpu_busy(0.3);
    steps(t, kPhase - 1, 20, 15);
    EXPECT_FALSE(t.decide());  // not enough steps yet
    steps(t, 1, 20, 15);
    auto ask = t.decide();
    ASSERT_TRUE(ask);
    EXPECT_EQ(*ask, (LiveSetting{1, 2}));
    EXPECT_FALSE(t.decide());  // asked once, until applied
    t.applied({1, 2});
    steps(t, kPhase, 12, 7);  // 50 -> 83 steps/s
    ask = t.decide();
    ASSERT_TRUE(ask);
    EXPECT_EQ(*ask, (LiveSetting{2, 2}));
    auto lines = t.take_lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("num_workers=0 prefetch_factor=2 -> num_workers=1 prefetch_factor=2 at step 35: 50.0 -> "
                            "83.3 steps/s (+67 %), data wait 75 % -> 58 %: kept"),
              std::string::npos)
        << lines[0];
    t.applied({2, 2});
    steps(t, kPhase, 6, 1);  // still waits 17 %: then 4 workers
    ask = t.decide();
    ASSERT_TRUE(ask);
    EXPECT_EQ(*ask, (LiveSetting{4, 2}));
    t.applied({4, 2});
    steps(t, kPhase, 6.1, 0.5);  // no better: back to 2
    ask = t.decide();
    ASSERT_TRUE(ask);
    EXPECT_EQ(*ask, (LiveSetting{2, 2}));
    lines = t.take_lines();
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_NE(lines[1].find(": not 5 % better, back to num_workers=2 prefetch_factor=2"), std::string::npos)
        << lines[1];
    t.applied({2, 2});
    EXPECT_TRUE(t.done());
    steps(t, 3 * kPhase, 6, 1);
    EXPECT_FALSE(t.decide());
    EXPECT_EQ(t.history().size(), 3u);
}

TEST(LiveTuner, WithWorkersAtTheCpusThePrefetchGoesUpThenNothingMore) {
    LiveTuner t(2);
    t.loader(workers(2));
    t.cpu_busy(0.5);
    steps(t, kPhase, 10, 5);
    auto ask = t.decide();
    ASSERT_TRUE(ask);
    EXPECT_EQ(*ask, (LiveSetting{2, 4}));
    t.applied({2, 4});
    steps(t, kPhase, 8, 3);  // +25 %: kept; waits still, but nothing left to try
    EXPECT_FALSE(t.decide());
    EXPECT_TRUE(t.done());
    auto lines = t.take_lines();
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_NE(lines[1].find("nothing more to try"), std::string::npos) << lines[1];
}

TEST(LiveTuner, ALoopThatDoesNotWaitOrBusyCpusAreLeftAlone) {
    LiveTuner quiet(8);
    quiet.loader(workers(2));
    quiet.cpu_busy(0.4);
    steps(quiet, kPhase, 10, 0.2);
    EXPECT_FALSE(quiet.decide());
    EXPECT_FALSE(quiet.done());                    // still watching: the loader may get slower
    EXPECT_TRUE(quiet.take_lines().empty());       // nothing to say
    steps(quiet, LiveTuner::kPhaseSteps, 20, 12);  // it did: the latest steps wait 60 %
    auto slower = quiet.decide();
    ASSERT_TRUE(slower);
    EXPECT_EQ(*slower, (LiveSetting{4, 2}));
    // Waiting for data, but the CPUs are already saturated: more workers would starve the step.
    LiveTuner busy(8);
    busy.loader(workers(2));
    busy.cpu_busy(0.97);
    steps(busy, kPhase, 10, 6);
    EXPECT_FALSE(busy.decide());
    auto lines = busy.take_lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("with the CPUs 97 % busy: nothing more to try"), std::string::npos) << lines[0];
}

TEST(LiveTuner, WorkersThatStarveTheStepAreLowered) {
    LiveTuner t(4);
    t.loader(workers(4));
    t.cpu_busy(0.99);
    steps(t, kPhase, 20, 0.5);
    auto ask = t.decide();
    ASSERT_TRUE(ask);
    EXPECT_EQ(*ask, (LiveSetting{3, 2}));
}

TEST(LiveTuner, NoLoaderNoTuningAndAnAppliedSettingNotAskedForIsIgnored) {
    LiveTuner t(4);
    steps(t, 3 * kPhase, 20, 15);
    EXPECT_FALSE(t.decide());
    t.loader(workers(0));
    t.applied({8, 2});  // not asked
    steps(t, kPhase, 20, 15);
    auto ask = t.decide();
    ASSERT_TRUE(ask);
    EXPECT_EQ(ask->num_workers, 1);
}
