// ProcessTable on fixture trees (exact values, hostile names, vanishing processes) and on
// the real /proc under churn.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sys/resource.h>

#include "sample/linux/process_table.hpp"
#include "test_support.hpp"

using namespace baton;

namespace {

const ProcessInfo* find(const std::vector<ProcessInfo>& ps, std::uint32_t pid) {
    for (const auto& p : ps)
        if (p.pid == pid) return &p;
    return nullptr;
}

std::string stat_line(int pid, const std::string& comm, char state, int ppid, unsigned long utime, unsigned long stime,
                      unsigned long start, unsigned long rss) {
    return std::to_string(pid) + " (" + comm + ") " + state + " " + std::to_string(ppid) + " 1 1 0 -1 0 0 0 0 0 " +
           std::to_string(utime) + " " + std::to_string(stime) + " 0 0 20 0 1 0 " + std::to_string(start) + " 1000 " +
           std::to_string(rss) + " 18446744073709551615\n";
}

}  // namespace

TEST(ProcessTable, ReadsFixtureProcesses) {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    os::ProcessTable t(d.path() + "/proc");
    std::vector<ProcessInfo> ps;
    t.scan(10.0, 1764400000, ps);
    ASSERT_EQ(ps.size(), 6u);
    EXPECT_TRUE(std::is_sorted(ps.begin(), ps.end(), [](auto& a, auto& b) { return a.pid < b.pid; }));
    const ProcessInfo* trainer = find(ps, 100);
    ASSERT_NE(trainer, nullptr);
    EXPECT_EQ(trainer->ppid, 1u);
    EXPECT_EQ(trainer->name, "python3");
    EXPECT_EQ(trainer->command, "python3 train.py --batch-size 64");
    EXPECT_EQ(trainer->uid, 1000u);
    EXPECT_EQ(trainer->state, 'R');
    EXPECT_EQ(trainer->threads, 12u);
    EXPECT_EQ(trainer->rss_bytes, 500000ull * static_cast<unsigned long long>(sysconf(_SC_PAGESIZE)));
    EXPECT_EQ(trainer->cgroup, "/user.slice/user-1000.slice/session-1.scope");
    const long hz = sysconf(_SC_CLK_TCK);
    EXPECT_EQ(trainer->start_time_ms, (1764400000LL + 5000 / hz) * 1000 + (5000 % hz) * 1000 / hz);
    EXPECT_FALSE(trainer->cpu_percent.has_value());  // first sight: no rate, not 0
    EXPECT_FALSE(trainer->read_bytes_per_second.has_value());
    EXPECT_FALSE(trainer->container_pid.has_value());

    const ProcessInfo* evil = find(ps, 200);
    ASSERT_NE(evil, nullptr);
    EXPECT_EQ(evil->name, "evil) S 1 (name");
    EXPECT_EQ(evil->state, 'S');
    EXPECT_EQ(evil->ppid, 1u);
    EXPECT_EQ(evil->container_pid, 7u);

    const ProcessInfo* kthread = find(ps, 2);
    ASSERT_NE(kthread, nullptr);
    EXPECT_EQ(kthread->command, "[kthreadd]");
    EXPECT_EQ(kthread->user, "root");
}

TEST(ProcessTable, CpuAndIoRatesFromDeltas) {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    os::ProcessTable t(d.path() + "/proc");
    std::vector<ProcessInfo> ps;
    t.scan(10.0, 1764400000, ps);
    const long hz = sysconf(_SC_CLK_TCK);
    // pid 100 used 1.5 s of CPU in 2 s and read 1 MiB, wrote 2 MiB; pid 101 did nothing.
    d.write("proc/100/stat", stat_line(100, "python3", 'R', 1, 50000 + static_cast<unsigned long>(hz),
                                       5000 + static_cast<unsigned long>(hz / 2), 5000, 500000));
    d.write("proc/100/io", "read_bytes: " + std::to_string(4096 + (1 << 20)) +
                               "\nwrite_bytes: " + std::to_string(8192 + (2 << 20)) + "\n");
    d.write("proc/101/io", "read_bytes: 999999999\nwrite_bytes: 999999999\n");  // must not be read
    t.scan(12.0, 1764400000, ps);
    const ProcessInfo* trainer = find(ps, 100);
    ASSERT_NE(trainer, nullptr);
    EXPECT_NEAR(*trainer->cpu_percent, 75.0, 1e-9);
    EXPECT_DOUBLE_EQ(*trainer->read_bytes_per_second, (1 << 20) / 2.0);
    EXPECT_DOUBLE_EQ(*trainer->write_bytes_per_second, (2 << 20) / 2.0);
    const ProcessInfo* idle = find(ps, 101);
    ASSERT_NE(idle, nullptr);
    EXPECT_DOUBLE_EQ(*idle->cpu_percent, 0);
    // No CPU time since the last reading: io is not read, and the rate is 0.
    EXPECT_DOUBLE_EQ(*idle->read_bytes_per_second, 0);
}

TEST(ProcessTable, VanishedReusedAndExecedProcesses) {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    os::ProcessTable t(d.path() + "/proc");
    std::vector<ProcessInfo> ps;
    t.scan(1.0, 0, ps);
    d.remove("proc/101");                                                                 // exited
    d.write("proc/102/stat", stat_line(102, "bash", 'S', 1, 0, 0, 9999, 10));             // pid reused
    d.write("proc/100/stat", stat_line(100, "torchrun", 'S', 1, 50000, 5000, 5000, 10));  // exec'd
    d.write("proc/100/cmdline", std::string("torchrun\0--nproc-per-node\0"
                                            "8\0",
                                            27));
    t.scan(2.0, 0, ps);
    EXPECT_EQ(find(ps, 101), nullptr);
    const ProcessInfo* reused = find(ps, 102);
    ASSERT_NE(reused, nullptr);
    EXPECT_EQ(reused->name, "bash");
    EXPECT_FALSE(reused->cpu_percent.has_value());  // a new process: no rate yet
    const ProcessInfo* execed = find(ps, 100);
    ASSERT_NE(execed, nullptr);
    EXPECT_EQ(execed->command, "torchrun --nproc-per-node 8");  // identity re-read after exec
    EXPECT_EQ(t.size(), ps.size());
}

TEST(ProcessTable, HostileAndBrokenEntries) {
    test::TempDir d;
    d.write("proc/300/stat", "300 (ok) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1 1 1\n");
    d.write("proc/300/status", "Uid:\t0\t0\t0\t0\n");
    d.write("proc/301/stat", "301 (truncated");           // malformed: skipped
    d.write("proc/302/status", "Uid:\t0\n");              // no stat: skipped
    d.write("proc/303/stat", std::string(1 << 16, '('));  // garbage: skipped
    d.write("proc/abc/stat", "1 (x) S 1\n");              // not a pid
    d.write("proc/0123/stat", "1 (x) S 1\n");             // not a canonical pid
    d.write("proc/304/stat", "304 (\xff\xfe\x1b[31m) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1 1 1\n");
    d.write("proc/304/status", "Uid:\t4294967294\t0\t0\t0\n");  // nobody-like uid with no passwd entry
    os::ProcessTable t(d.path() + "/proc");
    std::vector<ProcessInfo> ps;
    t.scan(1.0, 0, ps);
    ASSERT_EQ(ps.size(), 2u);
    EXPECT_EQ(ps[0].pid, 300u);
    EXPECT_EQ(ps[1].name, "\xff\xfe\x1b[31m");
    EXPECT_FALSE(ps[1].user.empty());
}

TEST(ProcessTable, RealProcUnderChurn) {
    // Children that exit continuously while we scan: no crash, no half-read process.
    std::vector<pid_t> kids;
    pid_t spawner = fork();
    if (spawner == 0) {
        for (int i = 0; i < 400; ++i) {
            pid_t c = fork();
            if (c == 0) _exit(0);
            if (c > 0) waitpid(c, nullptr, 0);
        }
        _exit(0);
    }
    os::ProcessTable t("/proc");
    std::vector<ProcessInfo> ps;
    for (int i = 0; i < 30; ++i) {
        t.scan(static_cast<double>(i), 0, ps);
        ASSERT_FALSE(ps.empty());
        for (const auto& p : ps) {
            ASSERT_GT(p.pid, 0u);
            ASSERT_FALSE(p.name.empty());
            ASSERT_NE(p.state, '?');
        }
    }
    waitpid(spawner, nullptr, 0);
    EXPECT_NE(find(ps, static_cast<std::uint32_t>(getpid())), nullptr);
}

TEST(ProcessTable, SkipsListingWhileNoTaskWasCreated) {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    os::ProcessTable t(d.path() + "/proc");
    std::vector<ProcessInfo> ps;
    t.scan(1.0, 0, ps, 500);
    EXPECT_EQ(t.listings(), 1u);
    d.write("proc/400/stat", stat_line(400, "new", 'S', 1, 0, 0, 7000, 10));
    d.write("proc/400/status", "Uid:\t0\t0\t0\t0\n");
    t.scan(2.0, 0, ps, 500);  // counter unchanged: the directory is not listed again
    EXPECT_EQ(t.listings(), 1u);
    EXPECT_EQ(find(ps, 400), nullptr);
    EXPECT_EQ(ps.size(), 6u);
    t.scan(3.0, 0, ps, 501);  // a task was created: list
    EXPECT_EQ(t.listings(), 2u);
    EXPECT_NE(find(ps, 400), nullptr);
    t.scan(4.0, 0, ps);  // no counter: always list
    EXPECT_EQ(t.listings(), 3u);
}

TEST(ProcessTable, ExitedProcessLeavesWithoutAListing) {
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    os::ProcessTable t("/proc");
    std::vector<ProcessInfo> ps;
    t.scan(1.0, 0, ps, 42);
    ASSERT_NE(find(ps, static_cast<std::uint32_t>(child)), nullptr);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    t.scan(2.0, 0, ps, 42);  // same counter: no listing; the kept descriptor says it is gone
    EXPECT_EQ(t.listings(), 1u);
    EXPECT_EQ(find(ps, static_cast<std::uint32_t>(child)), nullptr);
}

TEST(ProcessTable, OutOfDescriptorsStillSeesEveryProcess) {
    // With the descriptor limit nearly used up, processes are read by path instead of
    // being dropped.
    pid_t child = fork();
    if (child == 0) {
        std::size_t expected = 0;
        for (auto& e : std::filesystem::directory_iterator("/proc"))
            expected += std::isdigit(static_cast<unsigned char>(e.path().filename().string()[0])) ? 1 : 0;
        rlimit rl{};
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = 24;  // a few for stdio and the /proc directory, far fewer than processes
        setrlimit(RLIMIT_NOFILE, &rl);
        os::ProcessTable t("/proc");
        std::vector<ProcessInfo> ps;
        t.scan(1.0, 0, ps);
        t.scan(2.0, 0, ps);
        std::size_t listed = 0;
        for (const auto& p : ps) listed += p.pid > 0;
        // Allow for processes that came or went between the scan and the count.
        _exit(listed + 10 >= expected && ps.size() > 24 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
