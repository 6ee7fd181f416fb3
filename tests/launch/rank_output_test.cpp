// A rank's output stream: whole lines to the console (prefixed with --tee), everything to the log,
// the last stderr lines kept for the root-cause block, the first NCCL error line of each stream.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/rank_output.hpp"
#include "run/nccl_errors.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::launch;

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

// A rank's log may hold tokens: 0600 whatever the umask, the directories baton creates 0700, a
// log that was there before (0644) tightened too; with a group, 0640 and 0750 and that group's.
TEST(RankStream, LogsAreTheUsersAloneOrTheGroupsWhenOneIsGiven) {
    test::TempDir d;
    const mode_t old_umask = umask(0);  // the most permissive: the modes must not come from it
    {
        RankStream s(0, -1, false, d.path() + "/logs/run/attempt_0/0/stderr.log", 0);
        ASSERT_TRUE(s.open().ok());
    }
    struct stat st {};
    ASSERT_EQ(stat((d.path() + "/logs/run/attempt_0/0/stderr.log").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    for (const char* dir : {"/logs", "/logs/run", "/logs/run/attempt_0", "/logs/run/attempt_0/0"}) {
        ASSERT_EQ(stat((d.path() + dir).c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 0700u) << dir;
    }
    d.write("old.log", "before");
    chmod((d.path() + "/old.log").c_str(), 0644);
    {
        RankStream s(0, -1, false, d.path() + "/old.log", 0);
        ASSERT_TRUE(s.open().ok());
    }
    ASSERT_EQ(stat((d.path() + "/old.log").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(test::read_text(d.path() + "/old.log"), "");
    {
        RankStream s(0, -1, false, d.path() + "/shared/0/stdout.log", 0);
        ASSERT_TRUE(s.open(getgid()).ok());
    }
    ASSERT_EQ(stat((d.path() + "/shared/0/stdout.log").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    EXPECT_EQ(st.st_gid, getgid());
    ASSERT_EQ(stat((d.path() + "/shared/0").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0750u);
    umask(old_umask);
}

// A link planted where a log will be is refused, and what it points at is left untouched.
TEST(RankStream, APlantedLinkIsNotFollowed) {
    test::TempDir d;
    d.write("victim", "keep me");
    ASSERT_EQ(mkdir((d.path() + "/0").c_str(), 0700), 0);
    ASSERT_EQ(symlink((d.path() + "/victim").c_str(), (d.path() + "/0/stderr.log").c_str()), 0);
    RankStream s(0, -1, false, d.path() + "/0/stderr.log", 0);
    const Status st = s.open();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("is a symbolic link"), std::string::npos) << st.error().message;
    s.feed("secret\n", 0);
    EXPECT_EQ(test::read_text(d.path() + "/victim"), "keep me");
}

TEST(RankStream, TheFirstNcclErrorLineOfAStreamIsKeptWithItsTime) {
    test::TempDir d;
    // A stdout stream: no lines kept for the tail, the NCCL line found all the same, across chunks.
    RankStream s(1, -1, false, d.path() + "/stdout.log", 0);
    ASSERT_TRUE(s.open().ok());
    s.feed("epoch 1 loss 0.3\nnode7:123:456 [0] NCCL W", 0);
    EXPECT_FALSE(s.first_nccl_error());
    s.feed("ARN NET/Socket : peer 10.0.0.2<34567> shut down\r\n", 0.1);
    s.feed("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15)\n", 0.2);
    ASSERT_TRUE(s.first_nccl_error());
    EXPECT_EQ(s.first_nccl_error()->text, "node7:123:456 [0] NCCL WARN NET/Socket : peer 10.0.0.2<34567> shut down");
    EXPECT_GT(s.first_nccl_error()->unix_ms, 0);
    EXPECT_TRUE(s.tail().empty());
}

TEST(NcclErrors, TheLinesNcclAndPytorchPrint) {
    for (const char* yes :
         {"gpu3:5123:5190 [3] NCCL WARN Cuda failure 'out of memory'",
          "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, "
          "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
          "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
          "Last error: remote process exited or there was a network error",
          "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15, OpType=ALLREDUCE, "
          "NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600102 milliseconds before timing out.",
          "[Rank 0] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels",
          "[PG 0 Rank 1] Heartbeat monitor timed out! Process will be terminated after dumping debug info.",
          "RuntimeError: NCCL communicator was aborted on rank 3.", "ncclInternalError: Internal check failed."})
        EXPECT_TRUE(baton::run::nccl_error_line(yes)) << yes;
    for (const char* no :
         {"", "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>", "gpu3:5123:5190 [3] NCCL INFO NET/IB : No device found.",
          "epoch 3: loss 0.12", "Traceback (most recent call last):"})
        EXPECT_FALSE(baton::run::nccl_error_line(no)) << no;
}
