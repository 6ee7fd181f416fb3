// Ending a tree: the phases on a tree of stand-in callbacks (which signal when, the grace brought
// forward and never pushed back, the count SIGKILL reached, stuck after the last wait), and on real
// processes: one that ignores SIGTERM is killed after the grace, a grandchild that left the group
// and the session is still found and signalled.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "sample/linux/spawn.hpp"
#include "sample/linux/tree_end.hpp"
#include "test_support.hpp"

using namespace baton;
using Phase = os::TreeEnd::Phase;

namespace {

// A tree of stand-ins: what was sent, and whether anything is left.
struct FakeTree {
    std::vector<int> sent;
    bool left = true;
    int reach = 3;
    os::TreeEnd::Tree tree() {
        return {[this](int sig) {
                    sent.push_back(sig);
                    return reach;
                },
                [this] { return left; }};
    }
};

}  // namespace

TEST(TreeEnd, GraceThenSigkillThenStuck) {
    FakeTree t;
    os::TreeEnd e(t.tree(), 5);
    EXPECT_EQ(e.step(100), Phase::running);
    EXPECT_TRUE(t.sent.empty()) << "nothing is sent before begin";
    e.begin(100, 10);
    EXPECT_EQ(t.sent, std::vector<int>{SIGTERM});
    EXPECT_EQ(e.deadline(), 110);
    EXPECT_EQ(e.step(109.9), Phase::grace);
    EXPECT_EQ(e.step(110), Phase::killed);
    EXPECT_EQ(t.sent, (std::vector<int>{SIGTERM, SIGKILL}));
    EXPECT_EQ(e.killed(), 3);
    EXPECT_EQ(e.deadline(), 115);
    EXPECT_EQ(e.step(114), Phase::killed);
    EXPECT_EQ(e.step(115), Phase::stuck);
    EXPECT_EQ(t.sent.size(), 2u) << "SIGKILL is sent once";
}

TEST(TreeEnd, GoneWhenNothingIsLeftAndNoSigkillThen) {
    FakeTree t;
    os::TreeEnd e(t.tree(), 5);
    e.begin(0, 10, SIGINT);
    EXPECT_EQ(t.sent, std::vector<int>{SIGINT}) << "the stop signal passed on is the first";
    t.left = false;
    EXPECT_EQ(e.step(50), Phase::gone);
    EXPECT_EQ(e.killed(), 0);
    EXPECT_EQ(t.sent.size(), 1u);
    e.begin(60, 1);
    EXPECT_EQ(t.sent.size(), 1u) << "a gone tree is not signalled again";
}

TEST(TreeEnd, ALaterBeginBringsTheEndForwardNeverBack) {
    FakeTree t;
    os::TreeEnd e(t.tree(), 5);
    e.begin(0, 10);
    e.begin(1, 30);
    EXPECT_EQ(e.deadline(), 10) << "not pushed back";
    e.begin(2, 3);
    EXPECT_EQ(e.deadline(), 5) << "brought forward";
    EXPECT_EQ(t.sent.size(), 3u) << "each begin sends its signal";
    EXPECT_EQ(e.step(5), Phase::killed);
    e.begin(6, 100, SIGINT);
    EXPECT_EQ(t.sent.back(), SIGINT) << "after SIGKILL a begin only signals";
    EXPECT_EQ(e.deadline(), 10) << "the last wait is not moved";
}

TEST(TreeEnd, EndOfNothingSendsNothing) {
    FakeTree t;
    t.left = false;
    os::TreeEnd e(t.tree(), 5);
    EXPECT_EQ(e.end(10), Phase::gone);
    EXPECT_TRUE(t.sent.empty());
}

// A real process that ignores SIGTERM: SIGKILL after the grace, and end() returns once it is gone.
TEST(TreeEnd, AProcessThatIgnoresSigtermIsKilledAfterTheGrace) {
    test::TempDir dir;
    os::SpawnSpec s;
    s.argv = {"sh", "-c", "trap '' TERM; echo up > " + dir.path() + "/up; while :; do sleep 0.05; done"};
    Result<pid_t> pid = os::spawn(s);
    ASSERT_TRUE(pid.ok()) << pid.error().message;
    ASSERT_TRUE(test::eventually([&] { return std::ifstream(dir.path() + "/up").good(); }, 10));
    int status = 0;
    os::TreeEnd e({[&](int sig) { return ::kill(-*pid, sig) == 0 ? 1 : 0; },
                   [&] { return ::waitpid(*pid, &status, WNOHANG) != *pid; }},
                  5);
    const double start = monotonic_seconds();
    EXPECT_EQ(e.end(0.3), Phase::gone);
    EXPECT_GE(monotonic_seconds() - start, 0.3) << "the grace was given";
    EXPECT_EQ(e.killed(), 1);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    ::kill(-*pid, SIGKILL);  // (the group's sleep, if it outlived its shell)
}

// descendants() finds a grandchild that made a session of its own (no group signal reaches it), and
// signal_tree() ends it by pid and start time, listed before the group's signal ends its parent.
TEST(TreeEnd, AGrandchildInItsOwnSessionIsFoundAndSignalled) {
    test::TempDir dir;
    os::SpawnSpec s;
    s.argv = {"sh", "-c", "setsid sh -c 'echo $$ > " + dir.path() + "/escaped; exec sleep 300' & wait"};
    Result<pid_t> pid = os::spawn(s);
    ASSERT_TRUE(pid.ok()) << pid.error().message;
    pid_t escaped = 0;
    ASSERT_TRUE(test::eventually(
        [&] {
            std::ifstream in(dir.path() + "/escaped");
            return static_cast<bool>(in >> escaped) && escaped > 0;
        },
        10));
    ASSERT_TRUE(test::eventually(
        [&] {
            for (const os::TreeMember& m : os::descendants(*pid))
                if (m.pid == escaped && m.name == "sleep") return true;
            return false;
        },
        10))
        << "the sleep in its own session is a descendant";
    EXPECT_NE(::getsid(escaped), ::getsid(*pid));
    EXPECT_GE(os::signal_tree(*pid, *pid, SIGKILL), 2);
    EXPECT_TRUE(test::eventually([&] { return ::kill(escaped, 0) != 0; }, 10)) << "the escaped sleep ended";
    ::kill(-*pid, SIGKILL);
    ::waitpid(*pid, nullptr, 0);
}
