// When the hang watch looks and when its looks make a verdict: with the hook's steps (nothing while
// steps come; two looks once they stop for hang_seconds; a step clears it), without them (a look a
// period, the same stacks across hang_seconds), and no verdict while every rank works.
#include "hang/hang_watch.hpp"

#include <gtest/gtest.h>

using baton::hang::HangWatch;
using baton::hang::HangWatchOptions;
using baton::hang::Look;
using baton::hang::PyFrame;
using baton::hang::RankLook;
using Kind = baton::hang::HangWatch::Change::Kind;

namespace {

std::vector<PyFrame> waiting_frames() {
    return {{"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 1541, "all_reduce"},
            {"/w/t.py", 6, "train_step"},
            {"/w/t.py", 23, "<module>"}};
}
std::vector<PyFrame> working_frames(unsigned line) {
    return {{"/w/t.py", line, "evaluate"}, {"/w/t.py", 23, "<module>"}};
}

// Two ranks at monotonic time `t` (unix ms = t * 1000): rank 0 waits; rank 1 as given.
Look at(double t, std::vector<PyFrame> rank1, double cpu1) {
    Look l;
    l.at = t;
    l.unix_ms = static_cast<std::int64_t>(t * 1000);
    RankLook r0;
    r0.rank = 0;
    r0.pid = 10;
    r0.state = 'S';
    r0.has_stacks = true;
    r0.frames = waiting_frames();
    RankLook r1 = r0;
    r1.rank = 1;
    r1.pid = 11;
    r1.frames = std::move(rank1);
    r1.cpu_seconds = cpu1;
    l.ranks = {r0, r1};
    return l;
}

std::int64_t ms(double t) {
    return static_cast<std::int64_t>(t * 1000);
}

}  // namespace

TEST(HangWatch, WithStepsTwoLooksAfterTheQuietAndAStepClearsIt) {
    HangWatch w(HangWatchOptions{20, 5, 10, false});
    w.steps(ms(1000), 0.5);
    EXPECT_FALSE(w.look_due(1010, ms(1010))) << "steps came 10 s ago: nothing to look at";
    ASSERT_TRUE(w.look_due(1020, ms(1020)));
    EXPECT_FALSE(w.add_look(at(1020, working_frames(88), 0))) << "one look: the second confirms";
    EXPECT_FALSE(w.look_due(1023, ms(1023)));
    ASSERT_TRUE(w.look_due(1025, ms(1025)));
    auto c = w.add_look(at(1025, working_frames(89), 5));  // rank 1 runs while rank 0 waits
    ASSERT_TRUE(c);
    EXPECT_EQ(c->kind, Kind::appeared);
    EXPECT_EQ(c->verdict->rule, "rank_hang");
    EXPECT_NE(c->verdict->summary.find("rank 1 is in evaluate() at /w/t.py:89, running"), std::string::npos)
        << c->verdict->summary;
    EXPECT_FALSE(w.look_due(1030, ms(1030))) << "then a look a period";
    ASSERT_TRUE(w.look_due(1035, ms(1035)));
    EXPECT_FALSE(w.add_look(at(1035, working_frames(90), 15))) << "the same verdict is not said again";
    w.steps(ms(1036), 0.5);
    ASSERT_TRUE(w.look_due(1036.1, ms(1036.1))) << "steps again: one look clears it";
    c = w.add_look(at(1036.1, working_frames(90), 16));
    ASSERT_TRUE(c);
    EXPECT_EQ(c->kind, Kind::cleared);
    EXPECT_FALSE(w.look_due(1040, ms(1040)));
}

TEST(HangWatch, TheDefaultIsTenMedianStepsAndAtLeastAMinute) {
    HangWatch w(HangWatchOptions{});
    w.steps(ms(1000), 0.5);
    EXPECT_EQ(w.hang_seconds(), 60);
    w.steps(ms(1000), 12);
    EXPECT_EQ(w.hang_seconds(), 120);
    EXPECT_FALSE(w.look_due(1100, ms(1100)));
    EXPECT_TRUE(w.look_due(1120, ms(1120)));
}

TEST(HangWatch, EveryRankWorkingWithoutStepsIsNoHang) {
    HangWatch w(HangWatchOptions{20, 5, 10, false});
    w.steps(ms(1000), 0.5);
    // An evaluation on every rank: both ranks' stacks move.
    Look a = at(1020, working_frames(88), 0), b = at(1025, working_frames(90), 5);
    a.ranks[0].frames = working_frames(70);
    b.ranks[0].frames = working_frames(71);
    b.ranks[0].cpu_seconds = 5;
    EXPECT_FALSE(w.add_look(a));
    EXPECT_FALSE(w.add_look(b));
    EXPECT_FALSE(w.verdict());
}

TEST(HangWatch, WithoutStepsTheSameStacksAcrossHangSeconds) {
    HangWatch w(HangWatchOptions{30, 5, 10, false});
    // Rank 0 works all along (its stack moves); rank 1 sits at line 40 but for a move at 20 s.
    auto look = [](double t, unsigned rank1_line, double cpu1) {
        Look l = at(t, working_frames(rank1_line), cpu1);
        l.ranks[0].frames = working_frames(100 + static_cast<unsigned>(t));
        l.ranks[0].cpu_seconds = t;
        return l;
    };
    EXPECT_TRUE(w.look_due(0, 0)) << "no steps: a look at once, then a period";
    EXPECT_FALSE(w.add_look(look(0, 40, 0)));
    EXPECT_FALSE(w.look_due(5, ms(5)));
    EXPECT_TRUE(w.look_due(10, ms(10)));
    EXPECT_FALSE(w.add_look(look(10, 40, 0)));
    EXPECT_FALSE(w.add_look(look(20, 41, 0)));
    EXPECT_FALSE(w.add_look(look(30, 40, 0))) << "back where it was at 0 s, but it moved at 20 s";
    EXPECT_FALSE(w.add_look(look(40, 40, 0)));
    EXPECT_FALSE(w.add_look(look(50, 40, 0)));
    auto c = w.add_look(look(60, 40, 0));  // at line 40 since 30 s, with no CPU
    ASSERT_TRUE(c);
    EXPECT_EQ(c->kind, Kind::appeared);
    EXPECT_EQ(c->verdict->since_unix_ms, ms(20)) << "the last progress seen: at 20 s it was at line 41";
    EXPECT_EQ(c->verdict->summary.find("since at least"), std::string::npos) << c->verdict->summary;
    EXPECT_NE(c->verdict->summary.find("rank 1 is blocked in evaluate() at /w/t.py:40"), std::string::npos)
        << c->verdict->summary;
    c = w.add_look(look(70, 50, 8));
    ASSERT_TRUE(c) << "rank 1 works again";
    EXPECT_EQ(c->kind, Kind::cleared);
}

// Stuck from before the first look: the first look is all that is known, and the summary says so.
TEST(HangWatch, StuckFromTheFirstLookSaysSinceAtLeast) {
    HangWatch w(HangWatchOptions{30, 5, 10, false});
    auto look = [](double t) {
        Look l = at(t, working_frames(40), 0);
        l.ranks[0].frames = working_frames(100 + static_cast<unsigned>(t));
        l.ranks[0].cpu_seconds = t;
        return l;
    };
    std::optional<HangWatch::Change> c;
    for (double t = 0; t <= 40 && !c; t += 10) c = w.add_look(look(t));
    ASSERT_TRUE(c);
    EXPECT_EQ(c->verdict->since_unix_ms, ms(0));
    EXPECT_NE(c->verdict->summary.find("since at least "), std::string::npos) << c->verdict->summary;
    EXPECT_NE(c->verdict->summary.find("(the first look at its stacks)"), std::string::npos) << c->verdict->summary;
}
