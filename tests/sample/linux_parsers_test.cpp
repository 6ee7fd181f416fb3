// Parsers of /proc text, on exact fixture text and on hostile input.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sample/linux/diskstats.hpp"
#include "sample/linux/kept_file.hpp"
#include "sample/linux/meminfo.hpp"
#include "sample/linux/net_dev.hpp"
#include "sample/linux/pressure.hpp"
#include "sample/linux/proc_pid_files.hpp"
#include "sample/linux/proc_pid_stat.hpp"
#include "sample/linux/proc_stat.hpp"
#include "sample/linux/system_reader.hpp"
#include "sample/linux/vmstat.hpp"
#include "sample/gpu/throttle_reasons.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::os;

TEST(ProcStat, ParsesTotalsCoresAndCounters) {
    ProcStat s;
    ASSERT_TRUE(
        parse_proc_stat("cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 0 0 1\ncpu3 2 0 0 2 0 0 0 0\nctxt 99\n"
                        "btime 1700000000\nprocs_running 4\nprocs_blocked 2\n",
                        s));
    EXPECT_EQ(s.total.user, 1u);
    EXPECT_EQ(s.total.steal, 8u);
    EXPECT_EQ(s.total.total(), 36u);  // guest (9, 10) is already inside user/nice
    ASSERT_EQ(s.cores.size(), 2u);
    EXPECT_EQ(s.cores[1].first, 3u);  // offline cpu1, cpu2: ids kept, not positions
    EXPECT_EQ(s.context_switches, 99u);
    EXPECT_EQ(s.boot_time_seconds, 1700000000u);
    EXPECT_EQ(s.procs_running, 4u);
    EXPECT_EQ(s.procs_blocked, 2u);
}

TEST(ProcStat, AnImpossibleBootTimeIsUnknown) {
    ProcStat s;
    ASSERT_TRUE(parse_proc_stat("cpu 1 2 3 4\nbtime 18446744073709551615\n", s));
    EXPECT_FALSE(s.boot_time_seconds.has_value());  // never a start time that overflows
}

TEST(ProcStat, OldKernelWithFourFields) {
    ProcStat s;
    ASSERT_TRUE(parse_proc_stat("cpu 1 2 3 4\n", s));
    EXPECT_EQ(s.total.iowait, 0u);
}

TEST(ProcStat, RejectsGarbage) {
    ProcStat s;
    EXPECT_FALSE(parse_proc_stat("", s));
    EXPECT_FALSE(parse_proc_stat("cpu x y z\n", s));
    EXPECT_FALSE(parse_proc_stat("cpu 1 2\n", s));
    EXPECT_FALSE(parse_proc_stat("cpu 1 2 3 4\ncpuX 1 2 3 4\n", s));
    EXPECT_FALSE(parse_proc_stat(std::string(100000, 'x'), s));
}

TEST(CpuTimes, PercentagesOfOneInterval) {
    CpuTicks a{100, 0, 50, 800, 50, 0, 0, 0};
    CpuTicks b{200, 0, 100, 1600, 100, 0, 0, 0};  // +100 user +50 sys +800 idle +50 iowait = 1000
    CpuTimes t = cpu_times_between(a, b);
    EXPECT_DOUBLE_EQ(*t.user_percent, 10);
    EXPECT_DOUBLE_EQ(*t.system_percent, 5);
    EXPECT_DOUBLE_EQ(*t.iowait_percent, 5);
    EXPECT_DOUBLE_EQ(*t.idle_percent, 80);
    EXPECT_DOUBLE_EQ(*t.utilization_percent, 15);
    EXPECT_FALSE(cpu_times_between(b, b).user_percent.has_value());  // no time passed: absent
    EXPECT_FALSE(cpu_times_between(b, a).user_percent.has_value());  // went backwards
}

TEST(MemInfo, ConvertsKilobytesAndFallsBack) {
    MemInfo m;
    ASSERT_TRUE(
        parse_meminfo("MemTotal: 100 kB\nMemFree: 10 kB\nMemAvailable: 50 kB\nSwapTotal: 8 kB\nSwapFree: 2 kB\n", m));
    EXPECT_EQ(m.total, 102400u);
    EXPECT_EQ(m.available, 51200u);
    EXPECT_EQ(m.swap_total - m.swap_free, 6144u);
    ASSERT_TRUE(parse_meminfo("MemTotal: 100 kB\n", m));
    EXPECT_FALSE(m.available.has_value());  // pre-3.14 kernel
    EXPECT_FALSE(parse_meminfo("garbage\n: 12\nMemFree 3\n", m));
}

TEST(VmStat, ReadsCountersSkipsTheRest) {
    VmStat v;
    parse_vmstat("nr_free 1\npswpin 10\npswpout 20\npgmajfault 30\noom_kill 2\npswpin_bogus x\n", v);
    EXPECT_EQ(v.pswpin, 10u);
    EXPECT_EQ(v.pswpout, 20u);
    EXPECT_EQ(v.pgmajfault, 30u);
    EXPECT_EQ(v.oom_kill, 2u);
    EXPECT_FALSE(v.reclaim_activity.has_value());  // no pgsteal_* lines
    parse_vmstat("pswpin\n", v);
    EXPECT_FALSE(v.pswpin.has_value());
    EXPECT_FALSE(v.oom_kill.has_value());  // kernel < 4.13
}

TEST(VmStat, ReclaimActivitySumsStealsAndSwapping) {
    VmStat v;
    // Every pgsteal_* name counts, old (per zone) and new kernels alike; pgscan does not.
    parse_vmstat(
        "pswpin 1\npswpout 2\npgsteal_kswapd 10\npgsteal_direct 20\npgsteal_kswapd_normal 100\n"
        "pgscan_kswapd 5000\npgsteal_anon x\n",
        v);
    EXPECT_EQ(v.reclaim_activity, 133u);
}

TEST(Pressure, ParsesSomeAndFull) {
    PressureResource r;
    ASSERT_TRUE(parse_pressure(
        "some avg10=1.50 avg60=0.50 avg300=0.10 total=123\nfull avg10=0.25 avg60=0 avg300=0 total=7\n", r));
    EXPECT_DOUBLE_EQ(r.some->avg10, 1.5);
    EXPECT_EQ(r.some->total_us, 123u);
    EXPECT_DOUBLE_EQ(r.full->avg10, 0.25);
    // Older kernels have no "full" line for cpu.
    ASSERT_TRUE(parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", r));
    EXPECT_FALSE(r.full.has_value());
    EXPECT_FALSE(parse_pressure("some avg10=abc\n", r));
    EXPECT_FALSE(parse_pressure("some avg10=1 avg60=1\n", r));
    EXPECT_FALSE(parse_pressure("", r));
}

TEST(DiskStats, ParsesAndSkipsMalformedLines) {
    std::vector<DiskCounters> d;
    parse_diskstats(
        " 8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n 8 1 sda1 1 2\nbroken\n 259 0 nvme0n1 10 0 20 30 40 0 50 60 0 70 80 0 0 0 "
        "0\n",
        d);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].name, "sda");
    EXPECT_EQ(d[0].sectors_read, 3u);
    EXPECT_EQ(d[0].write_ms, 8u);
    EXPECT_EQ(d[0].io_ticks_ms, 10u);
    EXPECT_EQ(d[1].name, "nvme0n1");
}

TEST(NetDev, ParsesInterfacesWithColonsInNames) {
    std::vector<NetCounters> n;
    parse_net_dev(
        "Inter-|   Receive |  Transmit\n face |bytes packets|bytes\n"
        "    lo: 10 1 0 0 0 0 0 0 20 2 0 0 0 0 0 0\n"
        "eth0:1:300 3 0 0 0 0 0 0 400 4 0 0 0 0 0 0\n"
        "bad: 1 2\n",
        n);
    ASSERT_EQ(n.size(), 2u);
    EXPECT_EQ(n[0].name, "lo");
    EXPECT_EQ(n[0].tx_bytes, 20u);
    EXPECT_EQ(n[1].name, "eth0:1");
    EXPECT_EQ(n[1].rx_bytes, 300u);
}

TEST(PidStat, NameWithSpacesAndParentheses) {
    PidStat s;
    ASSERT_TRUE(
        parse_pid_stat("200 (evil) S 1 (name) R 1 200 200 0 -1 4194560 100 0 7 0 11 12 0 0 20 0 3 0 6000 1000 55 "
                       "18446744073709551615 1 1 0",
                       s));
    EXPECT_EQ(s.comm, "evil) S 1 (name");
    EXPECT_EQ(s.state, 'R');
    EXPECT_EQ(s.ppid, 1u);
    EXPECT_EQ(s.utime, 11u);
    EXPECT_EQ(s.stime, 12u);
    EXPECT_EQ(s.num_threads, 3u);
    EXPECT_EQ(s.starttime, 6000u);
    EXPECT_EQ(s.rss_pages, 55u);
}

TEST(PidStat, RejectsTruncatedAndGarbage) {
    PidStat s;
    EXPECT_FALSE(parse_pid_stat("", s));
    EXPECT_FALSE(parse_pid_stat("12 (x", s));
    EXPECT_FALSE(parse_pid_stat("12 (x) S 1 2 3", s));
    EXPECT_FALSE(parse_pid_stat("x (y) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1 1 1", s));
    EXPECT_FALSE(parse_pid_stat("12 )x( S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1 1 1", s));
    EXPECT_FALSE(parse_pid_stat("12 (x) S 1 1 1 0 -1 0 0 0 0 0 a 1 0 0 20 0 1 0 1 1 1", s));
}

TEST(PidFiles, StatusUidAndInnermostPid) {
    PidStatus st;
    parse_pid_status("Name:\tx\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t4242\t17\t1\n", st);
    EXPECT_EQ(st.real_uid, 1000u);
    EXPECT_EQ(st.innermost_pid, 1u);
    parse_pid_status("Name:\tx\n", st);
    EXPECT_FALSE(st.real_uid.has_value());
    EXPECT_FALSE(st.innermost_pid.has_value());  // kernels before 4.1
}

TEST(PidFiles, CmdlineJoin) {
    std::string out;
    join_cmdline(std::string("python3\0train.py\0\0--lr\0"
                             "0.1\0\0",
                             26),
                 out);
    EXPECT_EQ(out, "python3 train.py  --lr 0.1");
    join_cmdline("", out);
    EXPECT_EQ(out, "");
}

TEST(PidFiles, Io) {
    PidIo io;
    ASSERT_TRUE(parse_pid_io("rchar: 1\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n", io));
    EXPECT_EQ(io.read_bytes, 4096u);
    EXPECT_EQ(io.write_bytes, 8192u);
    EXPECT_FALSE(parse_pid_io("rchar: 1\n", io));
    EXPECT_FALSE(parse_pid_io("read_bytes: x\nwrite_bytes: 1\n", io));
}

TEST(PidFiles, SchedStat) {
    PidSchedStat s;
    ASSERT_TRUE(parse_pid_schedstat("189245054 18325623 579\n", s));
    EXPECT_EQ(s.runtime_ns, 189245054u);
    EXPECT_EQ(s.switches_in, 579u);
    EXPECT_FALSE(parse_pid_schedstat("", s));
    EXPECT_FALSE(parse_pid_schedstat("1 2\n", s));
    EXPECT_FALSE(parse_pid_schedstat("1 -2 3\n", s));
    EXPECT_FALSE(parse_pid_schedstat(std::string(5000, '9'), s));  // overflow, not a wrapped number
}

TEST(ThrottleReasons, DecodesKnownAndUnknownBits) {
    EXPECT_TRUE(decode_throttle_reasons(0).empty());
    auto r = decode_throttle_reasons(0x1 | 0x4 | 0x40 | (1ULL << 40));
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0], "gpu_idle");
    EXPECT_EQ(r[1], "sw_power_cap");
    EXPECT_EQ(r[2], "hw_thermal_slowdown");
    EXPECT_EQ(r[3], "unknown_0x10000000000");
}

// Reads of system files never block and are bounded: a FIFO or a device is refused at open, and a
// file larger than any real /proc file is cut at kMaxFileBytes.
TEST(KeptFile, NeverBlocksAndIsBounded) {
    baton::test::TempDir d;
    const std::string fifo = d.path() + "/fifo";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    os::KeptFile f;
    EXPECT_FALSE(f.open(fifo));  // would block until a writer opens it, without O_NONBLOCK
    EXPECT_EQ(f.last_errno(), EINVAL);
    EXPECT_FALSE(f.open("/dev/zero"));  // endless
    EXPECT_EQ(f.last_errno(), EINVAL);
    EXPECT_FALSE(f.open(d.path()));  // a directory
    const std::string big = d.path() + "/big";
    {
        const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(ftruncate(fd, static_cast<off_t>(os::kMaxFileBytes) * 3), 0);  // sparse
        ::close(fd);
    }
    os::ReadBuffer buf;
    ASSERT_TRUE(os::read_file(big, buf));
    EXPECT_EQ(buf.size(), os::kMaxFileBytes);
}
