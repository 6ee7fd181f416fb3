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
#include <time.h>

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

os::ScanHints forks(std::uint64_t since_boot) {
    os::ScanHints h;
    h.forks_since_boot = since_boot;
    return h;
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
    // A hybrid host: the Slurm job's v1 memory cgroup, not slurmd's unified one.
    EXPECT_EQ(trainer->cgroup, "/slurm/uid_1000/job_4242/step_0/task_0");
    EXPECT_EQ(trainer->job.kind, JobKind::slurm);
    EXPECT_EQ(trainer->job.id, "4242");
    EXPECT_EQ(trainer->job.step, "0");
    EXPECT_EQ(find(ps, 1)->job.kind, JobKind::user);
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
    t.scan(1.0, 0, ps, forks(500));
    EXPECT_EQ(t.listings(), 1u);
    d.write("proc/400/stat", stat_line(400, "new", 'S', 1, 0, 0, 7000, 10));
    d.write("proc/400/status", "Uid:\t0\t0\t0\t0\n");
    t.scan(2.0, 0, ps, forks(500));  // counter unchanged: the directory is not listed again
    EXPECT_EQ(t.listings(), 1u);
    EXPECT_EQ(find(ps, 400), nullptr);
    EXPECT_EQ(ps.size(), 6u);
    t.scan(3.0, 0, ps, forks(501));  // a task was created: list
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
    t.scan(1.0, 0, ps, forks(42));
    ASSERT_NE(find(ps, static_cast<std::uint32_t>(child)), nullptr);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    t.scan(2.0, 0, ps, forks(42));  // same counter: no listing; the kept descriptor says it is gone
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

namespace {

// A process table scan with the reclaim counter fixed (no reclaim between scans) unless given.
os::ScanHints quiet(std::uint64_t reclaim = 7) {
    os::ScanHints h;
    h.reclaim_activity = reclaim;
    return h;
}

void spin_for(double seconds) {
    timespec start{}, now{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (static_cast<double>(now.tv_sec - start.tv_sec) + static_cast<double>(now.tv_nsec - start.tv_nsec) * 1e-9 <
             seconds);
}

// One single-threaded process (pid 500, or `pid`) with a schedstat file.
void write_process(const test::TempDir& d, int pid, char state, int ppid, unsigned long rss, unsigned threads = 1,
                   const std::string& schedstat = "1000 0 5\n") {
    std::string stat = stat_line(pid, "idle", state, ppid, 10, 10, 700, rss);
    // stat_line writes num_threads = 1 (field 20); give the requested count.
    const std::string one_thread = " 20 0 1 0 ";
    stat.replace(stat.find(one_thread), one_thread.size(), " 20 0 " + std::to_string(threads) + " 0 ");
    const std::string dir = "proc/" + std::to_string(pid);
    d.write(dir + "/stat", stat);
    d.write(dir + "/status", "Uid:\t0\t0\t0\t0\n");
    d.write(dir + "/cmdline", std::string("idle\0", 5));
    d.write(dir + "/schedstat", schedstat);
}

}  // namespace

TEST(ProcessTable, IdleProcessIsNotReadUntilItRuns) {
    test::TempDir d;
    write_process(d, 500, 'S', 1, 100);
    os::ProcessTable t(d.path() + "/proc");
    std::vector<ProcessInfo> ps;
    t.scan(1.0, 0, ps, quiet());
    t.scan(1.1, 0, ps, quiet());
    EXPECT_EQ(t.idle_skips(), 1u);
    // The stat file changes but schedstat does not: the process did not run, so a change
    // like this one cannot happen on a real kernel; that baton did not see it proves the skip.
    write_process(d, 500, 'S', 1, 200);
    t.scan(1.2, 0, ps, quiet());
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].rss_bytes, 100u * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
    EXPECT_DOUBLE_EQ(*ps[0].cpu_percent, 0.0);  // a skipped process did not run: 0 %, not absent
    EXPECT_DOUBLE_EQ(*ps[0].read_bytes_per_second, 0.0);
    EXPECT_EQ(ps[0].command, "idle");
    EXPECT_EQ(t.idle_skips(), 2u);

    write_process(d, 500, 'S', 1, 300, 1, "1500 0 6\n");  // it ran
    t.scan(1.3, 0, ps, quiet());
    EXPECT_EQ(ps[0].rss_bytes, 300u * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
    EXPECT_EQ(t.idle_skips(), 2u);

    write_process(d, 500, 'S', 1, 400, 1, "1500 0 6\n");
    t.scan(1.4, 0, ps, quiet(8));  // pages were reclaimed: RSS may have dropped, read everyone
    EXPECT_EQ(ps[0].rss_bytes, 400u * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
    EXPECT_EQ(t.idle_skips(), 2u);
    t.scan(1.5, 0, ps, quiet(8));
    EXPECT_EQ(t.idle_skips(), 3u);

    write_process(d, 500, 'S', 1, 500, 1, "1500 0 6\n");
    t.scan(1.5 + os::ProcessTable::kIdleRefreshSeconds, 0, ps, quiet(8));  // due for a refresh
    EXPECT_EQ(ps[0].rss_bytes, 500u * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
    EXPECT_EQ(t.idle_skips(), 3u);
}

TEST(ProcessTable, NeverSkipsWhatSchedstatCannotVouchFor) {
    test::TempDir d;
    write_process(d, 500, 'R', 1, 100);                // running: its runtime is folded in only at ticks
    write_process(d, 501, 'S', 1, 100, 4);             // threads: the leader's schedstat misses the others
    write_process(d, 502, 'S', 1, 100, 1, "0 0 0\n");  // schedstat not maintained
    write_process(d, 503, 'S', 1, 100);
    d.remove("proc/503/schedstat");  // kernel without schedstat
    os::ProcessTable t(d.path() + "/proc");
    std::vector<ProcessInfo> ps;
    for (int i = 0; i < 4; ++i) t.scan(1.0 + i * 0.1, 0, ps, quiet());
    EXPECT_EQ(ps.size(), 4u);
    EXPECT_EQ(t.idle_skips(), 0u);

    os::ProcessTable no_counter(d.path() + "/proc");  // no reclaim counter: RSS could move unseen
    write_process(d, 504, 'S', 1, 100);
    for (int i = 0; i < 4; ++i) no_counter.scan(1.0 + i * 0.1, 0, ps);
    EXPECT_EQ(no_counter.idle_skips(), 0u);

    os::ProcessTable switched_off(d.path() + "/proc", false);  // config: skip_idle_processes = false
    for (int i = 0; i < 4; ++i) switched_off.scan(1.0 + i * 0.1, 0, ps, quiet());
    EXPECT_EQ(switched_off.idle_skips(), 0u);
    os::ProcessTable on(d.path() + "/proc");  // the same tree with skipping on: 504 is skipped
    for (int i = 0; i < 4; ++i) on.scan(1.0 + i * 0.1, 0, ps, quiet());
    EXPECT_EQ(on.idle_skips(), 3u);
}

namespace {

// Hints of a box where nothing was reclaimed and, while `forks` and `tasks` stay the same, no task
// was created or exited.
os::ScanHints still(std::uint64_t forks = 100, std::uint64_t tasks = 50) {
    os::ScanHints h = quiet();
    h.forks_since_boot = forks;
    h.tasks_alive = tasks;
    return h;
}

}  // namespace

// baton serve's table: a process idle for trust_idle_after_seconds is not looked at between its
// full reads while no task is created or exits, and its CPU rate then spans back to the last
// reading that really looked.
TEST(ProcessTable, LongIdleProcessIsTrustedUntilItsFullRead) {
    test::TempDir d;
    write_process(d, 500, 'S', 1, 100);
    os::ProcessTable t(d.path() + "/proc", true, /*trust_idle_after_seconds=*/2.0);
    std::vector<ProcessInfo> ps;
    t.scan(1.0, 0, ps, still());
    t.scan(2.0, 0, ps, still());  // idle for 1 s: checked (schedstat) and skipped
    EXPECT_EQ(t.idle_skips(), 1u);
    EXPECT_EQ(t.trusted_skips(), 0u);
    t.scan(3.0, 0, ps, still());  // idle for 2 s: trusted
    EXPECT_EQ(t.trusted_skips(), 1u);

    // It runs (0.4 s of CPU) and grows; trusted, nobody looks.
    const long hz = sysconf(_SC_CLK_TCK);
    const unsigned long ran = static_cast<unsigned long>(0.4 * static_cast<double>(hz));
    d.write("proc/500/stat", stat_line(500, "idle", 'S', 1, 10 + ran, 10, 700, 300));
    d.write("proc/500/schedstat", "9000 0 9\n");
    t.scan(3.5, 0, ps, still());
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(t.trusted_skips(), 2u);
    EXPECT_DOUBLE_EQ(*ps[0].cpu_percent, 0.0);
    EXPECT_EQ(ps[0].rss_bytes, 100u * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));

    // A fork somewhere: everyone is checked. Its 0.4 s are spread from the last real look (2.0).
    t.scan(4.0, 0, ps, still(101));
    EXPECT_EQ(t.trusted_skips(), 2u);
    EXPECT_NEAR(*ps[0].cpu_percent, 100.0 * 0.4 / 2.0, 1e-9);
    EXPECT_EQ(ps[0].rss_bytes, 300u * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
    EXPECT_NEAR(ps[0].cpu_seconds_total, static_cast<double>(20 + ran) / static_cast<double>(hz), 1e-9);

    // It just ran: checked again every tick until it has been idle for 2 s.
    t.scan(5.0, 0, ps, still(101));
    EXPECT_EQ(t.trusted_skips(), 2u);
    t.scan(6.0, 0, ps, still(101));
    EXPECT_EQ(t.trusted_skips(), 3u);

    // Due for its full read (at most kIdleRefreshSeconds after the last): read, trusted or not.
    d.write("proc/500/stat", stat_line(500, "idle", 'S', 1, 10 + ran, 10, 700, 400));
    double now = 6.0;
    while (ps[0].rss_bytes != 400u * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) && now < 20) {
        now += 1.0;
        t.scan(now, 0, ps, still(101));
    }
    EXPECT_LE(now, 4.0 + os::ProcessTable::kIdleRefreshSeconds + 1.0);
}

TEST(ProcessTable, AnExitOrAForkAnywhereEndsTheTrust) {
    test::TempDir d;
    write_process(d, 500, 'S', 1, 100);
    write_process(d, 501, 'S', 1, 100);
    os::ProcessTable t(d.path() + "/proc", true, 1.0);
    std::vector<ProcessInfo> ps;
    for (double now : {1.0, 1.5, 2.5}) t.scan(now, 0, ps, still());
    ASSERT_EQ(t.trusted_skips(), 2u);  // both, at 2.5

    // 501 exits and another task is created: the directory is listed again (a fixture's removed
    // process is only seen so; on the real /proc its kept descriptor fails, next test).
    d.remove("proc/501");
    t.scan(3.0, 0, ps, still(101, 50));
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].pid, 500u);
    EXPECT_EQ(t.trusted_skips(), 2u);

    // Its pid is reused by a new process: read as new, not taken for the trusted old one.
    write_process(d, 501, 'S', 1, 100);
    d.write("proc/501/stat", stat_line(501, "newcomer", 'S', 1, 10, 10, 900, 100));
    t.scan(3.5, 0, ps, still(102, 50));
    ASSERT_EQ(ps.size(), 2u);
    EXPECT_EQ(ps[1].name, "newcomer");

    // No task count (an old kernel's loadavg, a fixture): never trusted.
    os::ProcessTable blind(d.path() + "/proc", true, 1.0);
    os::ScanHints h = quiet();
    h.forks_since_boot = 100;
    for (double now : {1.0, 2.0, 3.0, 4.0}) blind.scan(now, 0, ps, h);
    EXPECT_EQ(blind.trusted_skips(), 0u);
    EXPECT_GT(blind.idle_skips(), 0u);
    // skip_idle_processes = false turns trusting off too.
    os::ProcessTable off(d.path() + "/proc", false, 1.0);
    for (double now : {1.0, 2.0, 3.0, 4.0}) off.scan(now, 0, ps, still());
    EXPECT_EQ(off.idle_skips(), 0u);
}

TEST(ProcessTable, RealTrustedProcessThatExitsIsGoneAtOnce) {
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    usleep(50000);  // asleep in pause()
    os::ProcessTable t("/proc", true, 0.05);
    std::vector<ProcessInfo> ps;
    t.scan(1.0, 0, ps, still(42, 7));
    t.scan(1.1, 0, ps, still(42, 7));
    t.scan(1.2, 0, ps, still(42, 7));
    ASSERT_NE(find(ps, static_cast<std::uint32_t>(child)), nullptr);
    EXPECT_GT(t.trusted_skips(), 0u);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    t.scan(1.3, 0, ps, still(42, 6));  // one task fewer: everyone is checked, the child's descriptor fails
    EXPECT_EQ(find(ps, static_cast<std::uint32_t>(child)), nullptr);
    EXPECT_EQ(t.listings(), 1u);
}

TEST(ProcessTable, OrphanOfAnExitedParentIsReadAgain) {
    // A child's ppid changes when its parent exits, without the child running.
    test::TempDir d;
    write_process(d, 500, 'S', 1, 100);
    write_process(d, 501, 'S', 500, 100);
    write_process(d, 502, 'S', 1, 100);
    write_process(d, 503, 'S', 502, 100);
    os::ProcessTable t(d.path() + "/proc");
    std::vector<ProcessInfo> ps;
    t.scan(1.0, 0, ps, quiet());
    t.scan(1.1, 0, ps, quiet());
    ASSERT_EQ(t.idle_skips(), 4u);

    // 500 exits and is reaped (it vanishes after its child was scanned: the next scan fixes
    // the child); 502 exits and stays a zombie (seen before its child, in the same scan).
    d.remove("proc/500");
    write_process(d, 501, 'S', 1, 100);
    write_process(d, 502, 'Z', 1, 0, 1, "2000 0 9\n");
    write_process(d, 503, 'S', 1, 100);
    t.scan(1.2, 0, ps, quiet());
    ASSERT_EQ(ps.size(), 3u);
    EXPECT_EQ(find(ps, 503)->ppid, 1u);
    t.scan(1.3, 0, ps, quiet());
    EXPECT_EQ(find(ps, 501)->ppid, 1u);
}

TEST(ProcessTable, RealIdleChildIsSkippedAndStillCorrect) {
    // On the real /proc: a sleeping child is skipped; when it wakes and burns CPU the next
    // scan sees it; when its parent exits, its new parent shows at once.
    int to_middle[2];
    int from_middle[2];
    ASSERT_EQ(pipe(to_middle), 0);
    ASSERT_EQ(pipe(from_middle), 0);
    pid_t middle = fork();
    if (middle == 0) {
        pid_t leaf = fork();
        if (leaf == 0) {
            // Sleep until SIGUSR1, then spin for 0.4 s, then sleep again.
            signal(SIGUSR1, [](int) {});
            sigset_t none;
            sigemptyset(&none);
            for (;;) {
                sigsuspend(&none);
                spin_for(0.4);
            }
        }
        (void)!write(from_middle[1], &leaf, sizeof leaf);
        char c;
        (void)!read(to_middle[0], &c, 1);  // exit when told
        _exit(0);
    }
    pid_t leaf = 0;
    ASSERT_EQ(read(from_middle[0], &leaf, sizeof leaf), static_cast<ssize_t>(sizeof leaf));
    struct KillAtEnd {
        pid_t pid;
        ~KillAtEnd() { kill(pid, SIGKILL); }
    } leaf_guard{leaf}, middle_guard{middle};
    auto leaf_info = [&](const std::vector<ProcessInfo>& ps) { return find(ps, static_cast<std::uint32_t>(leaf)); };
    auto true_ppid = [&] {
        std::string s = test::read_text("/proc/" + std::to_string(leaf) + "/stat");
        std::string_view v(s);
        v.remove_prefix(v.rfind(')') + 4);  // ") S "
        return static_cast<std::uint32_t>(std::stoul(std::string(v.substr(0, v.find(' ')))));
    };
    usleep(100000);  // let the leaf reach sigsuspend

    os::ProcessTable t("/proc");
    std::vector<ProcessInfo> ps;
    double now = 1.0;
    auto scan = [&] {
        now += 0.1;
        t.scan(now, 0, ps, quiet());
    };
    scan();
    scan();
    scan();
    ASSERT_NE(leaf_info(ps), nullptr);
    EXPECT_GT(t.idle_skips(), 0u);  // the leaf and most of this machine sleep
    EXPECT_EQ(leaf_info(ps)->ppid, static_cast<std::uint32_t>(middle));
    EXPECT_DOUBLE_EQ(*leaf_info(ps)->cpu_percent, 0.0);

    kill(leaf, SIGUSR1);
    usleep(200000);
    scan();  // 0.2 s of real CPU in 0.1 s of table time: the rate is large, never 0
    EXPECT_GT(*leaf_info(ps)->cpu_percent, 50.0);

    usleep(400000);  // back asleep
    scan();
    scan();
    char go = 'x';
    ASSERT_EQ(write(to_middle[1], &go, 1), 1);
    usleep(200000);  // the middle process is now a zombie, the leaf an orphan: ppid changed
    scan();
    EXPECT_EQ(leaf_info(ps)->ppid, true_ppid());
    EXPECT_NE(leaf_info(ps)->ppid, static_cast<std::uint32_t>(middle));
    waitpid(middle, nullptr, 0);
    scan();
    EXPECT_EQ(leaf_info(ps)->ppid, true_ppid());
    for (int fd : {to_middle[0], to_middle[1], from_middle[0], from_middle[1]}) close(fd);
}

// The GPU figures the sampler joins in are per tick: a reused process record starts each scan
// without them (a GPU index, its memory, or the "ambiguous" mark left from the last tick would
// outlive the process's GPU use).
TEST(ProcessTable, GpuFieldsStartEachScanEmpty) {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    os::ProcessTable t(d.path() + "/proc");
    std::vector<ProcessInfo> ps;
    t.scan(10.0, 1764400000, ps);
    for (ProcessInfo& p : ps) {
        p.gpu_indices = {0};
        p.gpu_memory_bytes = 1;
        p.gpu_memory_ambiguous = true;
    }
    t.scan(11.0, 1764400000, ps);
    ASSERT_FALSE(ps.empty());
    for (const ProcessInfo& p : ps) {
        EXPECT_TRUE(p.gpu_indices.empty()) << p.pid;
        EXPECT_FALSE(p.gpu_memory_bytes) << p.pid;
        EXPECT_FALSE(p.gpu_memory_ambiguous) << p.pid;
    }
}
