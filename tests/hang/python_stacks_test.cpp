// faulthandler's dumps read back: a real one written by Debian's Python, the forms a dump can
// take (one thread, unknown lines, no Python frame, cut at 100 frames), the last of several dumps
// appended to one file, and hostile text that yields fewer frames, never a crash.
#include <gtest/gtest.h>

#include <fstream>

#include "hang/python_stacks.hpp"
#include "test_support.hpp"

using baton::hang::group_stacks;
using baton::hang::main_thread;
using baton::hang::parse_faulthandler_dump;
using baton::hang::PyFrame;
using baton::hang::PyThreadStack;
using baton::hang::RankStack;
using baton::hang::StackGroup;

namespace {

// Written by Python 3.11's faulthandler.dump_traceback(all_threads=True) with a second thread waiting.
constexpr const char* kTwoThreads =
    "Thread 0x00007f63543876c0 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 622 in wait\n"
    "  File \"<stdin>\", line 5 in worker\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
    "\n"
    "Current thread 0x00007f63547aa2c0 (most recent call first):\n"
    "  File \"<stdin>\", line 7 in inner\n"
    "  File \"<stdin>\", line 8 in outer\n"
    "  File \"<stdin>\", line 9 in <module>\n";

}  // namespace

TEST(PythonStacks, EachThreadWithItsFramesInnermostFirst) {
    const std::vector<PyThreadStack> d = parse_faulthandler_dump(kTwoThreads);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].thread_id, 0x00007f63543876c0u);
    EXPECT_FALSE(d[0].current);
    ASSERT_EQ(d[0].frames.size(), 4u);
    EXPECT_EQ(d[0].frames[2], (PyFrame{"<stdin>", 5u, "worker"}));
    EXPECT_TRUE(d[1].current);
    ASSERT_EQ(d[1].frames.size(), 3u);
    EXPECT_EQ(d[1].frames.front(), (PyFrame{"<stdin>", 7u, "inner"}));
    EXPECT_EQ(d[1].frames.back().function, "<module>");
}

TEST(PythonStacks, TheLastOfSeveralDumpsCounts) {
    const std::string later = std::string(kTwoThreads) + "\n" +
                              "Thread 0x00007f63543876c0 (most recent call first):\n"
                              "  File \"/work/train.py\", line 88 in evaluate\n"
                              "\n"
                              "Current thread 0x00007f63547aa2c0 (most recent call first):\n"
                              "  File \"/work/train.py\", line 61 in step\n";
    const std::vector<PyThreadStack> d = parse_faulthandler_dump(later);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].frames, (std::vector<PyFrame>{{"/work/train.py", 88u, "evaluate"}}));
    EXPECT_EQ(d[1].frames, (std::vector<PyFrame>{{"/work/train.py", 61u, "step"}}));
    // A single-thread dump ("Stack") after it starts again too.
    const std::vector<PyThreadStack> one =
        parse_faulthandler_dump(later + "Stack (most recent call first):\n  File \"a.py\", line 1 in f\n");
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].thread_id, 0u);
    EXPECT_EQ(one[0].frames.at(0).file, "a.py");
    // ... and so does any thread after it.
    const std::vector<PyThreadStack> after = parse_faulthandler_dump(
        "Stack (most recent call first):\n  File \"a.py\", line 1 in f\n\nThread 0x5 (most recent call first):\n");
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].thread_id, 5u);
}

TEST(PythonStacks, UnknownLinesNoPythonFrameAndTheCut) {
    const std::vector<PyThreadStack> d = parse_faulthandler_dump(
        "Thread 0x1 (most recent call first):\n"
        "  <no Python frame>\n"
        "\n"
        "Current thread 0x2 (most recent call first):\n"
        "  File \"x.py\", line ??? in f\n"
        "  File \"we\\xe9ird \\\", line 3 in g.py\", line 12 in h\n"
        "  ...\n");
    ASSERT_EQ(d.size(), 2u);
    EXPECT_TRUE(d[0].frames.empty());
    ASSERT_EQ(d[1].frames.size(), 2u);
    EXPECT_EQ(d[1].frames[0].line, std::nullopt);
    EXPECT_EQ(d[1].frames[1].file, "we\\xe9ird \\\", line 3 in g.py");  // (quotes are not escaped)
    EXPECT_EQ(d[1].frames[1].line, 12u);
    EXPECT_TRUE(d[1].truncated);
}

TEST(PythonStacks, HostileTextGivesFewerFramesNotACrash) {
    EXPECT_TRUE(parse_faulthandler_dump("").empty());
    EXPECT_TRUE(parse_faulthandler_dump("  File \"a.py\", line 1 in f\n").empty());  // no header
    EXPECT_TRUE(parse_faulthandler_dump("Thread 0x12345678901234567 (most recent call first):\n").empty());
    EXPECT_TRUE(parse_faulthandler_dump("Thread 0xzz (most recent call first):\n").empty());
    EXPECT_TRUE(parse_faulthandler_dump("Thread 0x (most recent call first):\n").empty());
    const std::vector<PyThreadStack> cut = parse_faulthandler_dump(
        "Current thread 0xa (most recent call first):\n"
        "  File \"a.py\", line 99999999999 in f\n"  // (no line number that big)
        "  File \"a.py\", line 7\n"                 // cut while being written
        "  File \"a.py\", line -1 in f\n"
        "  File \"b.py\", line 2 in g\r\n"
        "  File \"c.py\", line 3 in h");  // the last line, without its newline
    ASSERT_EQ(cut.size(), 1u);
    EXPECT_EQ(cut[0].frames, (std::vector<PyFrame>{{"b.py", 2u, "g"}, {"c.py", 3u, "h"}}));
    std::string noise(1 << 16, '\n');
    for (std::size_t i = 0; i < noise.size(); i += 7) noise[i] = static_cast<char>(i * 31);
    (void)parse_faulthandler_dump(noise);
}

TEST(PythonStacks, WhatDebiansPythonWritesOnASignal) {
    baton::test::TempDir d;
    const std::string out = d.path() + "/stacks";
    // The way the launcher's sitecustomize will: registered on a signal, appended to a file.
    const std::string script =
        "import faulthandler, os, signal\n"
        "f = open('" +
        out +
        "', 'a')\n"
        "faulthandler.register(signal.SIGUSR2, file=f, all_threads=True)\n"
        "def waits_for_the_others():\n"
        "    os.kill(os.getpid(), signal.SIGUSR2)\n"
        "waits_for_the_others()\n";
    const baton::test::CommandResult r = baton::test::run({"/usr/bin/python3", "-c", script});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<PyThreadStack> dump = parse_faulthandler_dump(baton::test::read_text(out));
    ASSERT_EQ(dump.size(), 1u);
    EXPECT_TRUE(dump[0].current);
    ASSERT_EQ(dump[0].frames.size(), 2u);
    EXPECT_EQ(dump[0].frames[0], (PyFrame{"<string>", 5u, "waits_for_the_others"}));
    EXPECT_EQ(dump[0].frames[1], (PyFrame{"<string>", 6u, "<module>"}));
}

TEST(PythonStacks, TheMainThreadIsTheScriptsTopLevel) {
    const std::vector<PyThreadStack> d = parse_faulthandler_dump(kTwoThreads);
    ASSERT_NE(main_thread(d), nullptr);
    EXPECT_EQ(main_thread(d)->frames.front().function, "inner");
    std::vector<PyThreadStack> no_module = d;
    no_module[1].frames.pop_back();  // (a dump cut before the top level)
    EXPECT_EQ(main_thread(no_module), &no_module.back());
    EXPECT_EQ(main_thread({}), nullptr);
}

TEST(PythonStacks, RanksWithTheSameStackAreOneGroupAndWhereTheyPartIsMarked) {
    const PyFrame top{"train.py", 120u, "<module>"}, loop{"train.py", 70u, "train"};
    const PyFrame reduce{"train.py", 61u, "all_reduce_step"}, wait{"distributed_c10d.py", 1320u, "all_reduce"};
    const PyFrame eval{"train.py", 88u, "evaluate"};
    const std::vector<StackGroup> g = group_stacks({{3, {wait, reduce, loop, top}},
                                                    {2, {eval, loop, top}},
                                                    {0, {wait, reduce, loop, top}},
                                                    {1, {wait, reduce, loop, top}}});
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[0].ranks, (std::vector<int>{0, 1, 3}));
    EXPECT_EQ(g[0].frames.front(), wait);
    EXPECT_EQ(g[1].ranks, (std::vector<int>{2}));
    EXPECT_EQ(g[0].shared_outer, 2u);  // <module> and train(): they part at the frame after
    EXPECT_EQ(g[1].shared_outer, 2u);
    // One stack everywhere: one group, every frame shared; none: no group.
    const std::vector<StackGroup> one = group_stacks({{1, {eval, top}}, {0, {eval, top}}});
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].ranks, (std::vector<int>{0, 1}));
    EXPECT_EQ(one[0].shared_outer, 2u);
    EXPECT_TRUE(group_stacks({}).empty());
    // Ties by size go to the lowest rank; a rank with no frames at all shares nothing.
    const std::vector<StackGroup> tie = group_stacks({{5, {eval, top}}, {4, {}}});
    ASSERT_EQ(tie.size(), 2u);
    EXPECT_EQ(tie[0].ranks, (std::vector<int>{4}));
    EXPECT_EQ(tie[0].shared_outer, 0u);
}
