#include "tune/verdict.hpp"

#include <gtest/gtest.h>

using namespace baton::tune;

// Recorded trials (steps/s) of tests/cli/auto_hook/loops.py on the 2-core CI machine: the script's own
// num_workers=0 against 2 workers, and a setting that changes nothing.
TEST(TuneVerdict, ASettingWinsOnlyBeyondTheNoise) {
    Verdict v = judge({{75.1, 76.0, 74.2}, {131.0, 128.4, 133.9}, {75.9, 73.8, 76.4}});
    ASSERT_TRUE(v.winner);
    EXPECT_EQ(*v.winner, 1u);
    EXPECT_TRUE(v.settings[1].wins);
    EXPECT_GT(v.settings[1].gain, 0.7);
    EXPECT_FALSE(v.settings[2].wins);
    EXPECT_NE(v.settings[2].why.find("below the 3 %"), std::string::npos) << v.settings[2].why;
}

TEST(TuneVerdict, NothingBeatsTheBaselineIsAnAnswer) {
    Verdict v = judge({{100, 104, 97}, {103, 99, 106}, {90, 92, 91}});
    EXPECT_FALSE(v.winner);
    EXPECT_NE(v.settings[1].why.find("within the noise"), std::string::npos) << v.settings[1].why;
    EXPECT_EQ(v.settings[2].why, "not faster");
}

TEST(TuneVerdict, OverlappingRangesDoNotWinEvenWithABetterMedian) {
    // +8 % median, but one baseline trial was as fast as the setting's slowest.
    Verdict v = judge({{100, 101, 109}, {108, 109, 110}});
    EXPECT_FALSE(v.winner);
}

TEST(TuneVerdict, OneTrialEachCannotTellTheNoise) {
    Verdict v = judge({{100}, {150}});
    EXPECT_FALSE(v.winner);
    EXPECT_NE(v.settings[1].why.find("noise is unknown"), std::string::npos);
}

TEST(TuneVerdict, SmallGainsAndFailedSettingsDoNotWin) {
    Verdict v = judge({{100, 100.2, 100.1}, {102, 102.1, 102.2}, {}});
    EXPECT_FALSE(v.winner);
    EXPECT_NE(v.settings[1].why.find("below the 3 %"), std::string::npos) << v.settings[1].why;
    EXPECT_EQ(v.settings[2].why, "no trial ran to the end");
    EXPECT_FALSE(judge({{}, {100, 101}}).winner);
}

TEST(TuneVerdict, TheBestOfSeveralWinnersIsTheWinner) {
    Verdict v = judge({{100, 101}, {130, 131}, {150, 152}});
    ASSERT_TRUE(v.winner);
    EXPECT_EQ(*v.winner, 2u);
    EXPECT_TRUE(v.settings[1].wins);
}
