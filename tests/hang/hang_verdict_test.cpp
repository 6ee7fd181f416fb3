// The hang verdict on two looks at a job's ranks: each rank told apart (waiting in a collective,
// blocked, running, busy in one place, in the kernel, stopped, exited), the desync of ranks waiting
// in different collectives, and no hang when every rank works (an evaluation or checkpoint on all).
#include "hang/hang_verdict.hpp"

#include <gtest/gtest.h>

#include "hang/frame_roles.hpp"

using baton::hang::collective_of;
using baton::hang::hang_finding;
using baton::hang::hang_text;
using baton::hang::judge_hang;
using baton::hang::library_file;
using baton::hang::Look;
using baton::hang::PyFrame;
using baton::hang::RankCondition;
using baton::hang::RankLook;
using baton::hang::user_frame;

namespace {

constexpr const char* kC10d = "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py";

// A main thread: the script's frames (outermost last) under `inner` library frames.
std::vector<PyFrame> stack(std::vector<PyFrame> frames) {
    return frames;
}
std::vector<PyFrame> in_all_reduce() {
    return stack({{kC10d, 1541, "all_reduce"},
                  {"/w/t.py", 6, "train_step"},
                  {"/w/t.py", 20, "main"},
                  {"/w/t.py", 23, "<module>"}});
}
std::vector<PyFrame> in_barrier() {
    return stack(
        {{kC10d, 3152, "barrier"}, {"/w/t.py", 9, "evaluate"}, {"/w/t.py", 18, "main"}, {"/w/t.py", 23, "<module>"}});
}
std::vector<PyFrame> evaluating(unsigned line) {
    return stack({{"/w/t.py", line, "evaluate"}, {"/w/t.py", 18, "main"}, {"/w/t.py", 23, "<module>"}});
}

RankLook rank(int r, std::vector<PyFrame> frames, double cpu, char state = 'S') {
    RankLook l;
    l.rank = r;
    l.pid = 100 + r;
    l.state = state;
    l.cpu_seconds = cpu;
    l.has_stacks = true;
    l.frames = std::move(frames);
    return l;
}

Look look(double at, std::vector<RankLook> ranks) {
    Look l;
    l.at = at;
    l.unix_ms = static_cast<std::int64_t>(at * 1000);
    l.ranks = std::move(ranks);
    return l;
}

}  // namespace

TEST(FrameRoles, TheUsersFrameAndTheCollective) {
    EXPECT_TRUE(library_file(kC10d));
    EXPECT_TRUE(library_file("/usr/lib/python3.11/threading.py"));
    EXPECT_TRUE(library_file("/usr/lib/python3.11/concurrent/futures/thread.py"));
    EXPECT_TRUE(library_file("/home/u/venv/lib/python3.11/site-packages/x.py"));
    EXPECT_TRUE(library_file("<frozen importlib._bootstrap>"));
    EXPECT_FALSE(library_file("/home/u/lib/python/train.py")) << "a user's lib/python/ without a version";
    EXPECT_FALSE(library_file("/w/t.py"));
    EXPECT_EQ(user_frame(in_all_reduce())->function, "train_step");
    EXPECT_EQ(collective_of(in_all_reduce()), "all_reduce");
    EXPECT_EQ(collective_of(in_barrier()), "barrier");
    EXPECT_EQ(collective_of(evaluating(88)), "");
    // torch 2.x wraps the collective in c10d_logger's wrapper: the collective's name still wins.
    EXPECT_EQ(collective_of({{"/x/torch/distributed/c10d_logger.py", 75, "wrapper"},
                             {"/x/torch/distributed/distributed_c10d.py", 2050, "all_reduce"},
                             {"/w/t.py", 6, "step"}}),
              "all_reduce");
    EXPECT_EQ(collective_of({{"/x/torch/autograd/__init__.py", 197, "backward"},
                             {"/x/torch/_tensor.py", 487, "backward"},
                             {"/w/t.py", 30, "step"}}),
              "backward")
        << "DDP's gradient all-reduce waits inside backward()";
    EXPECT_EQ(user_frame({}), nullptr);
}

TEST(HangVerdict, ARankInAnotherCollectiveIsADesyncNamingBothLines) {
    const Look a = look(100, {rank(0, in_all_reduce(), 1), rank(1, in_all_reduce(), 1), rank(2, in_barrier(), 1),
                              rank(3, in_all_reduce(), 1)});
    const Look b = look(105, {rank(0, in_all_reduce(), 1.01), rank(1, in_all_reduce(), 1), rank(2, in_barrier(), 1),
                              rank(3, in_all_reduce(), 1.02)});
    const auto v = judge_hang(a, b, 90000, false);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->rule, "rank_desync");
    EXPECT_NE(v->summary.find("rank 2 waits in barrier at /w/t.py:9 (evaluate)"), std::string::npos) << v->summary;
    EXPECT_NE(v->summary.find("ranks 0, 1, 3 wait in all_reduce at /w/t.py:6 (train_step) since "), std::string::npos)
        << v->summary;
    EXPECT_NE(v->summary.find("rank 2 skipped a collective"), std::string::npos) << v->summary;
    EXPECT_EQ(v->ranks[2].condition, RankCondition::waiting_in_collective);
    const std::string text = hang_text(*v, "baton launch");
    EXPECT_EQ(text.rfind("baton launch: rank_desync: rank 2 waits in barrier", 0), 0u) << text;
    EXPECT_NE(text.find("  > File \"/w/t.py\", line 9, in evaluate"), std::string::npos) << text;
    EXPECT_NE(text.find("see: baton explain rank_desync"), std::string::npos);
}

TEST(HangVerdict, EachCulpritIsNamedForWhatItDoes) {
    struct Case {
        RankLook before, after;
        RankCondition condition;
        const char* says;
        const char* means;
    };
    RankLook exited = rank(2, evaluating(40), 3);
    exited.alive = false;
    exited.exit_status = 0;
    RankLook d1 = rank(2, {}, 3, 'D'), d2 = rank(2, {}, 3, 'D');
    d1.has_stacks = d2.has_stacks = false;
    d2.wchan = "__refrigerator";
    const std::vector<Case> cases = {
        {rank(2, evaluating(88), 3), rank(2, evaluating(89), 8), RankCondition::running,
         "rank 2 is in evaluate() at /w/t.py:89, running (100 % of a core)", "does not reach the collective"},
        {rank(2, evaluating(88), 3), rank(2, evaluating(88), 8), RankCondition::busy_in_place,
         "rank 2 is in evaluate() at /w/t.py:88, busy in one place", "does not reach the collective"},
        {rank(2, evaluating(40), 3), rank(2, evaluating(40), 3.01), RankCondition::blocked,
         "rank 2 is blocked in evaluate() at /w/t.py:40 with no CPU", "waits on something else"},
        {d1, d2, RankCondition::in_kernel, "rank 2 is stuck in the kernel (state D, in __refrigerator)",
         "stuck in a system call"},
        {rank(2, evaluating(40), 3), exited, RankCondition::exited, "rank 2 exited (status 0)",
         "ended while the others wait for it"},
        {rank(2, evaluating(40), 3), rank(2, evaluating(40), 3, 'T'), RankCondition::stopped, "rank 2 is stopped",
         "was stopped"},
    };
    for (const Case& c : cases) {
        const Look a = look(100, {rank(0, in_all_reduce(), 1), rank(1, in_all_reduce(), 1), c.before});
        const Look b = look(105, {rank(0, in_all_reduce(), 1), rank(1, in_all_reduce(), 1), c.after});
        const auto v = judge_hang(a, b, 90000, false);
        ASSERT_TRUE(v) << c.says;
        EXPECT_EQ(v->rule, "rank_hang");
        EXPECT_EQ(v->ranks[2].condition, c.condition) << c.says;
        EXPECT_EQ(v->summary.rfind(c.says, 0), 0u) << v->summary;
        EXPECT_NE(v->summary.find("ranks 0, 1 wait in all_reduce at /w/t.py:6 since "), std::string::npos)
            << v->summary;
        EXPECT_NE(v->summary.find(c.means), std::string::npos) << v->summary;
    }
}

TEST(HangVerdict, EveryRankWorkingIsNoHang) {
    // An evaluation on every rank: their stacks move, their CPUs work.
    EXPECT_FALSE(judge_hang(look(100, {rank(0, evaluating(88), 1), rank(1, evaluating(90), 1)}),
                            look(105, {rank(0, evaluating(91), 5), rank(1, evaluating(88), 5)}), 0, false));
    // A long call on every rank (a checkpoint's torch.save, a compile): the same stacks, busy.
    EXPECT_FALSE(judge_hang(look(100, {rank(0, evaluating(88), 1), rank(1, evaluating(88), 1)}),
                            look(105, {rank(0, evaluating(88), 4), rank(1, evaluating(88), 4.5)}), 0, false));
}

TEST(HangVerdict, EveryRankInTheSameCollectiveSaysWhereTheMissingRankMayBe) {
    const Look a = look(100, {rank(0, in_all_reduce(), 1), rank(1, in_all_reduce(), 1)});
    const Look b = look(105, {rank(0, in_all_reduce(), 6), rank(1, in_all_reduce(), 6)});  // NCCL spins a core
    const auto one = judge_hang(a, b, 90000, false);
    ASSERT_TRUE(one);
    EXPECT_EQ(one->rule, "rank_hang");
    EXPECT_EQ(one->summary.rfind("every rank waits in all_reduce at /w/t.py:6 since ", 0), 0u) << one->summary;
    EXPECT_NE(one->summary.find("the collective itself does not complete"), std::string::npos);
    const auto several = judge_hang(a, b, 90000, true);
    ASSERT_TRUE(several);
    EXPECT_NE(several->summary.find("on another node"), std::string::npos) << several->summary;
    EXPECT_EQ(one->key, several->key) << "the same conditions: the same verdict";
}

TEST(HangVerdict, TheFindingCarriesTheVerdict) {
    const Look a = look(100, {rank(0, in_all_reduce(), 1), rank(1, evaluating(40), 1)});
    const Look b = look(105, {rank(0, in_all_reduce(), 1), rank(1, evaluating(40), 1)});
    const auto v = judge_hang(a, b, 90000, false);
    ASSERT_TRUE(v);
    const baton::diagnose::Finding f = hang_finding(*v, 60);
    EXPECT_EQ(f.rule, "rank_hang");
    EXPECT_EQ(f.severity, baton::diagnose::Severity::critical);
    EXPECT_EQ(f.subject, "job");
    EXPECT_EQ(f.summary, v->summary);
    ASSERT_EQ(f.evidence.size(), 3u);
    EXPECT_EQ(f.evidence[0].metric, "rank0.cpu_percent");
    EXPECT_EQ(f.evidence[2].threshold, ">= 60");
    EXPECT_EQ(f.doc, "docs/findings.md#rank_hang");
    EXPECT_NE(f.recommendation.find("if rank =="), std::string::npos);
}
