// SystemReader on a fixture tree: exact values, and exact rates after the counters move.
#include <gtest/gtest.h>

#include <map>

#include "sample/linux/system_reader.hpp"
#include "test_support.hpp"

using namespace baton;

namespace {

struct Fixture {
    test::TempDir dir;
    Fixture() { test::copy_fixture("machine", dir.path()); }
    os::Roots roots() const { return {dir.path() + "/proc", dir.path() + "/sys", dir.path()}; }
};

}  // namespace

TEST(SystemReader, FirstReadHasValuesButNoRates) {
    Fixture f;
    os::SystemReader r(f.roots());
    Snapshot s;
    r.read(100.0, s);
    EXPECT_EQ(s.host.hostname, "fixture-host");
    EXPECT_EQ(s.host.kernel, "6.1.0-fixture");
    EXPECT_EQ(s.host.cpu_count, 2u);
    EXPECT_DOUBLE_EQ(*s.host.uptime_seconds, 3600.5);
    EXPECT_DOUBLE_EQ(s.cpu.load_average[0], 1.5);
    EXPECT_DOUBLE_EQ(s.cpu.load_average[2], 0.25);
    EXPECT_EQ(s.cpu.runnable_tasks, 3u);
    EXPECT_EQ(r.tasks_alive(), 456u);  // loadavg's "running/total"
    EXPECT_FALSE(s.cpu.total.utilization_percent.has_value());
    EXPECT_FALSE(s.cpu.context_switches_per_second.has_value());
    EXPECT_EQ(s.memory.total_bytes, 32768000ull * 1024);
    EXPECT_EQ(s.memory.available_bytes, 20000000ull * 1024);
    EXPECT_EQ(s.memory.used_bytes, 12768000ull * 1024);
    EXPECT_EQ(s.memory.cached_bytes, 10400000ull * 1024);
    EXPECT_EQ(s.memory.shared_bytes, 1000000ull * 1024);
    EXPECT_EQ(s.swap.total_bytes, 8000000ull * 1024);
    EXPECT_EQ(s.swap.used_bytes, 1000000ull * 1024);
    EXPECT_EQ(s.swap.oom_kill_total, 2u);
    EXPECT_FALSE(s.swap.in_bytes_per_second.has_value());
    ASSERT_TRUE(s.pressure.available);
    EXPECT_DOUBLE_EQ(s.pressure.memory.some->avg10, 12.25);
    EXPECT_DOUBLE_EQ(s.pressure.memory.full->avg10, 3.0);
    // Partitions (nvme0n1p1), RAM disks and never-used loop devices are folded away.
    ASSERT_EQ(s.disks.size(), 2u);
    EXPECT_EQ(s.disks[0].name, "nvme0n1");
    EXPECT_EQ(s.disks[1].name, "sda");
    EXPECT_FALSE(s.disks[0].read_bytes_per_second.has_value());
    ASSERT_EQ(s.networks.size(), 2u);
    EXPECT_EQ(s.networks[1].name, "eth0");
    EXPECT_EQ(s.networks[1].speed_mbps, 25000u);
    EXPECT_FALSE(s.networks[0].speed_mbps.has_value());  // lo has no speed file
}

TEST(SystemReader, RatesFromTwoReadings) {
    Fixture f;
    os::SystemReader r(f.roots());
    Snapshot s;
    r.read(100.0, s);
    // Two seconds later: +1000 ticks split 60 user / 10 system / 20 idle / 10 iowait,
    // 2,000 context switches, 512 pages swapped in, 1024 out, 100 major faults.
    f.dir.write("proc/stat",
                "cpu  10600 500 3100 80200 1100 100 200 50 0 0\n"
                "cpu0 5300 250 1550 40100 550 50 100 25 0 0\n"
                "cpu1 5300 250 1550 40100 550 50 100 25 0 0\n"
                "ctxt 5002000\nbtime 1764400000\nprocs_running 5\nprocs_blocked 0\n");
    f.dir.write("proc/vmstat", "pgmajfault 1100\npswpin 612\npswpout 1224\noom_kill 3\n");
    // nvme0n1: +4096 sectors read, +8192 written, +10 reads, +20 writes, io_ticks +1000 ms,
    // read_ms + write_ms +300 over 30 I/Os.
    f.dir.write("proc/diskstats",
                " 259       0 nvme0n1 1010 0 204096 600 2020 0 408192 1700 0 2000 2000 0 0 0 0 0 0\n"
                " 259       1 nvme0n1p1 900 0 180000 450 1900 0 380000 1400 0 900 1850 0 0 0 0 0 0\n"
                "   8       0 sda 10 0 80 5 0 0 0 0 0 5 5 0 0 0 0\n");
    f.dir.write("proc/net/dev",
                "Inter-|   Receive |  Transmit\n face |bytes|bytes\n"
                "    lo:  100000 100 0 0 0 0 0 0 100000 100 0 0 0 0 0 0\n"
                "  eth0: 7000000 4000 0 0 0 0 0 0 3000000 3000 0 0 0 0 0 0\n");
    r.read(102.0, s);
    EXPECT_DOUBLE_EQ(*s.cpu.total.user_percent, 60);
    EXPECT_DOUBLE_EQ(*s.cpu.total.system_percent, 10);
    EXPECT_DOUBLE_EQ(*s.cpu.total.idle_percent, 20);
    EXPECT_DOUBLE_EQ(*s.cpu.total.iowait_percent, 10);
    EXPECT_DOUBLE_EQ(*s.cpu.total.utilization_percent, 70);
    ASSERT_EQ(s.cpu.cores.size(), 2u);
    EXPECT_DOUBLE_EQ(*s.cpu.cores[1].times.user_percent, 60);
    EXPECT_DOUBLE_EQ(*s.cpu.context_switches_per_second, 1000);
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    EXPECT_DOUBLE_EQ(*s.swap.in_bytes_per_second, 256 * page);
    EXPECT_DOUBLE_EQ(*s.swap.out_bytes_per_second, 512 * page);
    EXPECT_DOUBLE_EQ(*s.swap.major_faults_per_second, 50);
    EXPECT_EQ(s.swap.oom_kill_total, 3u);
    ASSERT_EQ(s.disks.size(), 2u);
    const DiskStats& d = s.disks[0];
    EXPECT_DOUBLE_EQ(*d.read_bytes_per_second, 4096.0 * 512 / 2);
    EXPECT_DOUBLE_EQ(*d.write_bytes_per_second, 8192.0 * 512 / 2);
    EXPECT_DOUBLE_EQ(*d.reads_per_second, 5);
    EXPECT_DOUBLE_EQ(*d.writes_per_second, 10);
    EXPECT_DOUBLE_EQ(*d.busy_percent, 50);
    EXPECT_DOUBLE_EQ(*d.average_wait_ms, 10);
    EXPECT_DOUBLE_EQ(*s.disks[1].busy_percent, 0);
    ASSERT_EQ(s.networks.size(), 2u);
    EXPECT_DOUBLE_EQ(*s.networks[1].rx_bytes_per_second, 1000000);
    EXPECT_DOUBLE_EQ(*s.networks[1].tx_bytes_per_second, 500000);
}

TEST(SystemReader, CountersGoingBackwardsGiveNoRate) {
    Fixture f;
    os::SystemReader r(f.roots());
    Snapshot s;
    r.read(1.0, s);
    f.dir.write("proc/vmstat", "pgmajfault 1\npswpin 1\npswpout 1\n");
    r.read(2.0, s);
    EXPECT_FALSE(s.swap.in_bytes_per_second.has_value());
    EXPECT_FALSE(s.swap.major_faults_per_second.has_value());
}

TEST(SystemReader, MissingFilesLeaveGapsNotCrashes) {
    test::TempDir empty;
    os::SystemReader r({empty.path() + "/proc", empty.path() + "/sys", empty.path() + "/nope"});
    Snapshot s;
    r.read(1.0, s);
    r.read(2.0, s);
    EXPECT_EQ(s.memory.total_bytes, 0u);
    EXPECT_FALSE(s.pressure.available);
    EXPECT_TRUE(s.disks.empty());
    EXPECT_TRUE(s.networks.empty());
    EXPECT_FALSE(s.memory.shm_total_bytes.has_value());
}

TEST(SystemReader, HostileFileContents) {
    Fixture f;
    f.dir.write("proc/stat", "cpu garbage\n\0\0\0");
    f.dir.write("proc/meminfo", std::string(200000, ':'));
    f.dir.write("proc/diskstats", "1 2\n\n\n 8 0 sda x y z\n");
    f.dir.write("proc/net/dev", ":::::\n|||\n eth0: 1 2 3\n");
    f.dir.write("proc/pressure/cpu", "some avg10=nan\n");
    f.dir.write("proc/loadavg", "");
    os::SystemReader r(f.roots());
    Snapshot s;
    r.read(1.0, s);
    r.read(2.0, s);
    EXPECT_FALSE(r.tasks_alive().has_value());
    for (const char* bad : {"1 2 3 4 5", "1.0 1.0 1.0 3/", "1.0 1.0 1.0 3/x 9", "nan nan nan /////"}) {
        f.dir.write("proc/loadavg", bad);
        r.read(3.0, s);
        EXPECT_FALSE(r.tasks_alive().has_value()) << bad;  // unknown: idle processes are then always checked
    }
    EXPECT_EQ(s.host.cpu_count, 0u);
    EXPECT_TRUE(s.disks.empty());
    EXPECT_TRUE(s.networks.empty());
}

TEST(SystemReader, RealProcIsSane) {
    os::SystemReader r({});
    Snapshot s;
    r.read(0.0, s);
    usleep(50000);
    r.read(0.05, s);
    EXPECT_GE(s.host.cpu_count, 1u);
    EXPECT_GT(s.memory.total_bytes, 0u);
    EXPECT_LE(s.memory.used_bytes, s.memory.total_bytes);
    ASSERT_TRUE(s.cpu.total.utilization_percent.has_value());
    EXPECT_GE(*s.cpu.total.utilization_percent, 0);
    EXPECT_LE(*s.cpu.total.utilization_percent, 100);
    EXPECT_FALSE(s.host.hostname.empty());
}

// Devices built over others (LVM's dm-0 over vda2, md0 over sda and sdb, a loop device over a file)
// are marked stacked; the leaves and zram are not (zram is left out of sums by name).
TEST(SystemReader, StackedDevicesAreMarked) {
    test::TempDir d;
    d.write("proc/diskstats",
            " 252 0 vda 10 0 800 5 10 0 800 5 0 5 5 0 0 0 0\n"
            " 252 2 vda2 10 0 800 5 10 0 800 5 0 5 5 0 0 0 0\n"
            " 253 0 dm-0 10 0 800 5 10 0 800 5 0 5 5 0 0 0 0\n"
            "   8 0 sda 10 0 800 5 10 0 800 5 0 5 5 0 0 0 0\n"
            "   8 16 sdb 10 0 800 5 10 0 800 5 0 5 5 0 0 0 0\n"
            "   9 0 md0 10 0 800 5 10 0 800 5 0 5 5 0 0 0 0\n"
            "   7 1 loop1 10 0 800 5 0 0 0 0 0 5 5 0 0 0 0\n"
            " 254 0 zram0 10 0 800 5 10 0 800 5 0 5 5 0 0 0 0\n");
    for (const char* dev : {"vda", "sda", "sdb", "zram0"}) d.write(std::string("sys/block/") + dev + "/size", "1\n");
    d.write("sys/block/vda/vda2/holders/dm-0", "");
    d.write("sys/block/dm-0/slaves/vda2", "");
    d.write("sys/block/md0/slaves/sda", "");
    d.write("sys/block/md0/slaves/sdb", "");
    d.write("sys/block/loop1/loop/backing_file", "/var/lib/snapd/snaps/core.snap\n");
    os::SystemReader r({d.path() + "/proc", d.path() + "/sys", d.path()});
    Snapshot s;
    r.read(1.0, s);
    std::map<std::string, bool> stacked;
    for (const DiskStats& x : s.disks) stacked[x.name] = x.stacked;
    const std::map<std::string, bool> want = {{"vda", false}, {"dm-0", true},  {"sda", false},  {"sdb", false},
                                              {"md0", true},  {"loop1", true}, {"zram0", false}};
    EXPECT_EQ(stacked, want);
    std::vector<std::string> storage;
    for (const DiskStats& x : s.disks)
        if (counts_as_storage(x)) storage.push_back(x.name);
    EXPECT_EQ(storage, (std::vector<std::string>{"vda", "sda", "sdb"}));
}
