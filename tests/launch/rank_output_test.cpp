// A rank's output stream: whole lines to the console (prefixed with --tee), everything to the log,
// the last stderr lines kept for the root-cause block.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include "launch/rank_output.hpp"
#include "test_support.hpp"

using namespace baton;

namespace {

// The console: a pipe read back after the stream wrote.
struct Console {
    int fds[2];
    Console() { EXPECT_EQ(pipe2(fds, O_NONBLOCK), 0); }
    ~Console() {
        close(fds[0]);
        close(fds[1]);
    }
    std::string take() {
        std::string out;
        char buf[4096];
        ssize_t n;
        while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
        return out;
    }
};

}  // namespace

TEST(RankStream, WholeLinesPrefixedAndTheLogKeepsEveryByte) {
    test::TempDir d;
    Console c;
    RankStream s(3, c.fds[1], true, d.path() + "/run/attempt_0/3/stderr.log", 20);
    ASSERT_TRUE(s.open().ok());
    s.feed("Trace", 0);
    EXPECT_EQ(c.take(), "");  // half a line waits for the rest
    s.feed("back (most recent call last):\n  File \"t.py\"\nValueError: x\npartial", 0.01);
    EXPECT_EQ(c.take(),
              "[rank 3]:Traceback (most recent call last):\n[rank 3]:  File \"t.py\"\n[rank 3]:ValueError: x\n");
    s.flush_stale(0.1);  // not stale yet
    EXPECT_EQ(c.take(), "");
    s.flush_stale(1.0);  // a progress bar: shown after a while, without its prefix twice
    EXPECT_EQ(c.take(), "[rank 3]:partial");
    s.feed(" done\n", 1.1);
    EXPECT_EQ(c.take(), " done\n");
    s.feed("no newline at the end", 1.2);
    s.finish();
    EXPECT_EQ(c.take(), "[rank 3]:no newline at the end\n");
    EXPECT_EQ(
        test::read_text(d.path() + "/run/attempt_0/3/stderr.log"),
        "Traceback (most recent call last):\n  File \"t.py\"\nValueError: x\npartial done\nno newline at the end");
    const std::deque<std::string> want = {"Traceback (most recent call last):", "  File \"t.py\"", "ValueError: x",
                                          "partial done", "no newline at the end"};
    EXPECT_EQ(s.tail(), want);
}

TEST(RankStream, KeepsOnlyTheLastLinesClippedAndNoConsoleWhenFiltered) {
    test::TempDir d;
    RankStream s(0, -1, false, d.path() + "/stderr.log", 20);
    ASSERT_TRUE(s.open().ok());
    for (int i = 0; i < 100; ++i) s.feed("line " + std::to_string(i) + "\r\n", 0);
    s.feed(std::string(100000, 'x') + "\n", 0);
    s.finish();
    ASSERT_EQ(s.tail().size(), 20u);
    EXPECT_EQ(s.tail().front(), "line 81");
    EXPECT_EQ(s.tail()[18], "line 99");
    EXPECT_EQ(s.tail().back().size(), 1000u);
    EXPECT_EQ(s.bytes(), test::read_text(d.path() + "/stderr.log").size());
}

TEST(RankStream, AnUnwritableLogIsAnError) {
    test::TempDir d;
    d.write("file", "x");
    RankStream s(0, -1, false, d.path() + "/file/sub/stderr.log", 0);
    Status st = s.open();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("cannot create"), std::string::npos) << st.error().message;
}
