// Who makes a host-wide load (diagnose/host_load.hpp): averaged over the window, named with users,
// and the share a set of pids makes.
#include "diagnose/host_load.hpp"

#include <gtest/gtest.h>

#include "diagnose/rules.hpp"

using namespace baton;
using namespace baton::diagnose;

namespace {

ProcessInfo proc(std::uint32_t pid, const std::string& name, const std::string& user, double cpu) {
    ProcessInfo p;
    p.pid = pid;
    p.name = name;
    p.user = user;
    p.cpu_percent = cpu;
    p.start_ticks = 100 + pid;
    return p;
}

// Thirty snapshots (a second apart: the default window) of a busy 2-core box: bob's stress-ng burns a core throughout,
// alice's trainer half of the time, a kernel thread next to nothing.
Window busy_box() {
    Window w;
    for (int i = 0; i < 30; ++i) {
        Snapshot s;
        s.time_unix_ms = 1764400000000 + i * 1000;
        s.host.cpu_count = 2;
        s.cpu.total.utilization_percent = 95;
        s.processes.push_back(proc(17, "stress-ng", "bob", 100));
        if (i % 2 == 0) s.processes.push_back(proc(4242, "python3", "alice", 90));
        s.processes.push_back(proc(9, "kworker/0:1", "root", 0.5));
        w.push_back(s);
    }
    return w;
}

}  // namespace

TEST(HostLoad, EachProcessIsAveragedOverTheWholeWindow) {
    const std::vector<ProcessLoad> loads = load_by_process(busy_box(), LoadKind::cpu);
    ASSERT_EQ(loads.size(), 3u);
    EXPECT_EQ(loads[0].pid, 17u);
    EXPECT_DOUBLE_EQ(loads[0].value, 100);
    EXPECT_EQ(loads[1].pid, 4242u);
    EXPECT_DOUBLE_EQ(loads[1].value, 45) << "present in half the snapshots";
    EXPECT_EQ(loads[1].user, "alice");
}

TEST(HostLoad, TheTextNamesProcessesAndUsersAboveATwentieth) {
    const std::vector<ProcessLoad> loads = load_by_process(busy_box(), LoadKind::cpu);
    EXPECT_EQ(load_text(loads, LoadKind::cpu),
              "stress-ng (pid 17, bob) 100 %, python3 (pid 4242, alice) 45 %; by user: bob 100 %, alice 45 %");
    EXPECT_EQ(load_text(loads, LoadKind::cpu, 1), "stress-ng (pid 17, bob) 100 %; by user: bob 100 %");
    EXPECT_EQ(load_text({}, LoadKind::cpu), "");
    // One user: no "by user".
    EXPECT_EQ(load_text({{17, "stress-ng", "bob", 100}, {18, "stress-ng", "bob", 50}}, LoadKind::cpu),
              "stress-ng (pid 17, bob) 100 %, stress-ng (pid 18, bob) 50 %");
    EXPECT_EQ(load_text({{5, "cp", "bob", 3e8}}, LoadKind::io), "cp (pid 5, bob) 300 MB/s");
    EXPECT_EQ(load_text({{5, "python3", "bob", 2.0 * (1ull << 30)}}, LoadKind::memory), "python3 (pid 5, bob) 2 GiB");
}

TEST(HostLoad, TheShareAJobMakes) {
    const std::vector<ProcessLoad> loads = load_by_process(busy_box(), LoadKind::cpu);
    EXPECT_NEAR(*share_of_load(loads, {4242}), 100 * 45 / 145.5, 1e-9);
    EXPECT_NEAR(*share_of_load(loads, {17, 4242, 9}), 100, 1e-9);
    EXPECT_DOUBLE_EQ(*share_of_load(loads, {}), 0);
    EXPECT_FALSE(share_of_load({}, {4242}).has_value()) << "nothing measured: no share";
}

TEST(HostLoad, APidReusedWithinTheWindowIsAnotherProcess) {
    Window w = busy_box();
    for (std::size_t i = 15; i < w.size(); ++i) w[i].processes[0] = proc(17, "make", "carol", 100);
    for (std::size_t i = 15; i < w.size(); ++i) w[i].processes[0].start_ticks = 999;
    const std::vector<ProcessLoad> loads = load_by_process(w, LoadKind::cpu);
    ASSERT_GE(loads.size(), 2u);
    EXPECT_DOUBLE_EQ(loads[0].value, 50);
    EXPECT_DOUBLE_EQ(loads[1].value, 50);
    EXPECT_NE(loads[0].user, loads[1].user);
}

TEST(HostLoad, HostFindingsNameWhoseLoadTheyAre) {
    const std::vector<Finding> f = diagnose::diagnose(busy_box(), Thresholds{});
    auto it = std::find_if(f.begin(), f.end(), [](const Finding& x) { return x.rule == "cpu_load_high"; });
    ASSERT_NE(it, f.end());
    EXPECT_NE(it->summary.find("; most of it from stress-ng (pid 17, bob) 100 %, python3 (pid 4242, alice) 45 %"),
              std::string::npos)
        << it->summary;

    // Swap traffic: the largest resident sets. I/O wait with no /proc/PID/io readable: said so.
    Window w = busy_box();
    for (Snapshot& s : w) {
        s.cpu.total.utilization_percent = 10;
        s.cpu.total.iowait_percent = 30;
        s.swap.in_bytes_per_second = 0;
        s.swap.out_bytes_per_second = 5e6;
        s.processes[0].rss_bytes = 8ull << 30;
    }
    const std::vector<Finding> g = diagnose::diagnose(w, Thresholds{});
    std::string swap, io;
    for (const Finding& x : g) {
        if (x.rule == "swap_active") swap = x.summary;
        if (x.rule == "io_wait_high") io = x.summary;
    }
    EXPECT_NE(swap.find("; most memory held by stress-ng (pid 17, bob) 8 GiB"), std::string::npos) << swap;
    EXPECT_NE(io.find("needs root to see (/proc/PID/io)"), std::string::npos) << io;
    for (Snapshot& s : w) s.processes.back().read_bytes_per_second = 2e8;  // the kernel thread
    for (const Finding& x : diagnose::diagnose(w, Thresholds{}))
        if (x.rule == "io_wait_high") {
            EXPECT_NE(x.summary.find("; most of it from kworker/0:1 (pid 9, root) 200 MB/s"), std::string::npos)
                << x.summary;
        }
}

TEST(HostLoad, OnlyHostWideLoadsHaveAKind) {
    EXPECT_EQ(load_kind_of_rule("cpu_load_high"), LoadKind::cpu);
    EXPECT_EQ(load_kind_of_rule("io_wait_high"), LoadKind::io);
    EXPECT_EQ(load_kind_of_rule("swap_active"), LoadKind::memory);
    EXPECT_FALSE(load_kind_of_rule("input_bound").has_value());
    EXPECT_FALSE(load_kind_of_rule("shm_low").has_value());
}
