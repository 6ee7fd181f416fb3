// baton clean's judgement over hand-made snapshots: what is listed, why, and what may be ended.
#include <gtest/gtest.h>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include "clean/ender.hpp"
#include "clean/leftovers.hpp"
#include "clean/process_facts.hpp"
#include "core/clock.hpp"
#include "store/run_owner.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::store;
using namespace baton::clean;

namespace {

constexpr std::int64_t kNow = 1'800'000'000'000;

ProcessInfo proc(std::uint32_t pid, std::uint32_t ppid, const std::string& name, std::uint32_t uid = 1000,
                 std::uint64_t gpu_bytes = 0, std::vector<unsigned> gpus = {}, char state = 'S') {
    ProcessInfo p;
    p.pid = pid;
    p.ppid = ppid;
    p.name = name;
    p.command = name + " args";
    p.uid = uid;
    p.user = uid == 0 ? "root" : uid == 1000 ? "alice" : "bob";
    p.state = state;
    p.start_time_ms = kNow - 3600'000;
    if (gpu_bytes) p.gpu_memory_bytes = gpu_bytes;
    p.gpu_indices = std::move(gpus);
    return p;
}

// init, alice's shell 50 running baton clean (60); the rest as each test adds.
Snapshot machine(std::vector<ProcessInfo> extra) {
    Snapshot s;
    s.time_unix_ms = kNow;
    s.processes = {proc(1, 0, "systemd", 0), proc(50, 1, "bash"), proc(60, 50, "baton")};
    for (ProcessInfo& p : extra) s.processes.push_back(std::move(p));
    std::sort(s.processes.begin(), s.processes.end(),
              [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
    return s;
}

CleanFilter alice() {
    CleanFilter f;
    f.caller_uid = 1000;
    f.caller_pid = 60;
    return f;
}

ProcessFacts group(std::uint32_t pgid) {
    ProcessFacts f;
    f.pgid = pgid;
    f.sid = pgid;
    f.start_ticks = 777;
    return f;
}

}  // namespace

TEST(CleanLeftovers, AnOrphanedRankWithGpuMemoryIsListedAndEndable) {
    // pid 200: a DataLoader worker of trainer 150 (gone), reparented to init, 3 GiB on GPU1.
    const Snapshot s = machine({proc(200, 1, "pt_data_worker", 1000, 3ull << 30, {1})});
    const auto l = find_leftovers(s, {{200, group(150)}}, alice());
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].kind, LeftoverKind::gpu_orphan);
    EXPECT_TRUE(l[0].endable);
    EXPECT_EQ(l[0].start_ticks, 777u);
    EXPECT_EQ(l[0].reason,
              "holds 3.0 GiB on GPU1; its parent ended (now a child of init), as did its process group's leader 150");
    EXPECT_DOUBLE_EQ(l[0].age_seconds, 3600);
}

TEST(CleanLeftovers, DaemonsLiveJobsAndNamesAreNotReasons) {
    ProcessFacts daemon = group(300);  // its own group's leader: started so on purpose
    const Snapshot s = machine({proc(300, 1, "Xorg", 0, 1ull << 30, {0}),         // a daemon with GPU memory
                                proc(400, 50, "python", 1000, 20ull << 30, {0}),  // a live job (parent: the shell)
                                proc(500, 1, "python", 1000, 0, {})});            // an orphan without GPU
    EXPECT_TRUE(find_leftovers(s, {{300, daemon}, {400, group(400)}, {500, group(450)}}, alice()).empty());
}

TEST(CleanLeftovers, ALaunchersRankAdoptedBySystemdUserIsAnOrphan) {
    ProcessFacts rank = group(210);  // its own session (baton launch, torchrun)
    rank.launched_rank = true;
    const Snapshot s = machine({proc(100, 1, "systemd", 1000), proc(210, 100, "python", 1000, 5ull << 30, {2})});
    const auto l = find_leftovers(s, {{210, rank}, {100, group(100)}}, alice());
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].pid, 210u);
    EXPECT_NE(l[0].reason.find("now a child of pid 100, systemd), and it is a launcher's rank"), std::string::npos)
        << l[0].reason;
}

TEST(CleanLeftovers, AnotherUsersOrphanIsListedButLeftAloneUnlessRoot) {
    const Snapshot s = machine({proc(200, 1, "python", 2000, 1ull << 30, {0})});
    const std::map<std::uint32_t, ProcessFacts> facts = {{200, group(150)}};
    auto l = find_leftovers(s, facts, alice());
    ASSERT_EQ(l.size(), 1u);
    EXPECT_FALSE(l[0].endable);
    EXPECT_EQ(l[0].left_alone, "another user's (bob): only they or root can end it");
    CleanFilter root = alice();
    root.caller_uid = 0;
    l = find_leftovers(s, facts, root);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_TRUE(l[0].endable);
}

TEST(CleanLeftovers, LeftoversOfAnEndedBatonWhateverTheyHold) {
    ProcessFacts left = group(220);
    left.owner_pid = 4242;
    left.owner_alive = false;
    ProcessFacts live = group(230);
    live.owner_pid = 4343;
    live.owner_alive = true;
    const Snapshot s = machine({proc(220, 1, "sleep", 1000), proc(230, 1, "sleep", 1000)});
    const auto l = find_leftovers(s, {{220, left}, {230, live}}, alice());
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].kind, LeftoverKind::baton_leftover);
    EXPECT_EQ(l[0].reason, "left by baton (pid 4242), which ended");
}

TEST(CleanLeftovers, DefunctProcessesAndTheParentThatDoesNotReapThem) {
    const Snapshot s = machine({proc(600, 50, "trainer", 1000), proc(601, 600, "python", 1000, 0, {}, 'Z'),
                                proc(602, 600, "python", 1000, 0, {}, 'Z')});
    const auto l = find_leftovers(s, {}, alice());
    ASSERT_EQ(l.size(), 3u);
    for (const Leftover& x : l) EXPECT_FALSE(x.endable) << x.pid;
    EXPECT_EQ(l[0].kind, LeftoverKind::defunct);
    EXPECT_EQ(l[0].reason, "defunct: its parent 600 (trainer) has not reaped it");
    EXPECT_EQ(l[2].kind, LeftoverKind::not_reaping);
    EXPECT_EQ(l[2].pid, 600u);
    EXPECT_EQ(l[2].reason, "does not reap 2 defunct children");
}

TEST(CleanLeftovers, FiltersAndNeverTheCallerOrItsAncestors) {
    ProcessFacts left = group(61);
    left.owner_pid = 1;
    left.owner_alive = false;
    // The caller's own ancestry (its shell 50) carries a dead owner: still never listed.
    const Snapshot s =
        machine({proc(200, 1, "python", 1000, 1ull << 30, {1}), proc(210, 1, "python", 1000, 2ull << 30, {3})});
    std::map<std::uint32_t, ProcessFacts> facts = {{200, group(150)}, {210, group(150)}, {50, left}, {60, left}};
    EXPECT_EQ(find_leftovers(s, facts, alice()).size(), 2u);
    CleanFilter f = alice();
    f.gpu = 3;
    auto l = find_leftovers(s, facts, f);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].pid, 210u);
    f = alice();
    f.older_than_seconds = 7200;  // they are an hour old
    EXPECT_TRUE(find_leftovers(s, facts, f).empty());
    // Most GPU memory first.
    l = find_leftovers(s, facts, alice());
    EXPECT_EQ(l[0].pid, 210u);
}

TEST(CleanFacts, StatIdsSurviveHostileNames) {
    const auto ids = parse_stat_ids("4242 (a) b (c 5) S 1 4200 4100 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1 2");
    ASSERT_TRUE(ids);
    EXPECT_EQ(ids->pgid, 4200u);
    EXPECT_EQ(ids->sid, 4100u);
    EXPECT_EQ(ids->start_ticks, 98765u);
    EXPECT_FALSE(parse_stat_ids("4242 (x) S 1 2"));
    EXPECT_FALSE(parse_stat_ids("no parenthesis"));
    EXPECT_FALSE(parse_stat_ids("1 (x) S 1 a 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5"));
}

TEST(CleanFacts, OwnerTokensAreStrict) {
    const auto o = parse_owner_token("4242:98765");
    ASSERT_TRUE(o);
    EXPECT_EQ(o->pid, 4242);
    EXPECT_EQ(o->start_ticks, 98765u);
    for (const char* bad : {"", ":", "4242", "4242:", ":1", "-1:5", "0:5", "1:x", "99999999999:1", "1:2:3",
                            "4242:123456789012345678901234"})
        EXPECT_FALSE(parse_owner_token(bad)) << bad;
    EXPECT_EQ(owner_token(*o), "4242:98765");
}

TEST(CleanFacts, ThisProcessIsReadFromProc) {
    Snapshot s;
    s.processes.push_back(ProcessInfo{});
    s.processes[0].pid = static_cast<std::uint32_t>(getpid());
    setenv(kOwnerVariable, owner_token(current_owner()).c_str(), 1);
    const auto facts = gather_process_facts(s);
    ASSERT_EQ(facts.size(), 1u);
    const ProcessFacts& f = facts.begin()->second;
    EXPECT_EQ(f.pgid, static_cast<std::uint32_t>(getpgrp()));
    EXPECT_EQ(f.start_ticks, process_start_ticks(getpid()).value_or(0));
    // environ is the one the process started with: BATON_OWNER set now is not in it.
    EXPECT_FALSE(f.owner_pid);
}

namespace {

pid_t start(const char* script) {
    const pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", script, static_cast<char*>(nullptr));
        _exit(127);
    }
    return pid;
}

bool running(pid_t pid) {
    return waitpid(pid, nullptr, WNOHANG) == 0;
}

// /proc/PID/FILE's text.
std::string proc_text(pid_t pid, const char* file) {
    return test::read_text("/proc/" + std::to_string(pid) + "/" + file);
}

}  // namespace

TEST(CleanEnder, APidReusedSinceTheListingIsNotSignalled) {
    const pid_t pid = start("exec sleep 30");
    ASSERT_TRUE(
        test::eventually([&] { return proc_text(pid, "comm") == "sleep\n"; }, 10));  // its start time is the sleep's
    const std::uint64_t ticks = process_start_ticks(pid).value_or(0);
    ASSERT_NE(ticks, 0u);
    // Listed with another start time: the pid now names another process.
    auto r = end_processes({{static_cast<std::uint32_t>(pid), ticks + 1, 1 << 30}}, 0.5);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].outcome, EndOutcome::reused);
    EXPECT_TRUE(running(pid));
    // Listed as it is: ended by SIGTERM.
    r = end_processes({{static_cast<std::uint32_t>(pid), ticks, 1 << 30}}, 2);
    EXPECT_EQ(r[0].outcome, EndOutcome::ended);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    // Gone meanwhile: nothing to do.
    r = end_processes({{static_cast<std::uint32_t>(pid), ticks, 0}}, 0.1);
    EXPECT_EQ(r[0].outcome, EndOutcome::gone_before);
}

TEST(CleanEnder, WhatIgnoresSigtermIsKilledAfterTheGrace) {
    const pid_t pid = start("trap '' TERM; while :; do sleep 0.05; done");
    // Once the shell ignores SIGTERM (signal 15: bit 14 of SigIgn).
    ASSERT_TRUE(test::eventually(
        [&] {
            const std::string status = proc_text(pid, "status");
            const std::size_t at = status.find("SigIgn:\t");
            return at != std::string::npos && (std::stoull(status.substr(at + 8, 16), nullptr, 16) & (1ull << 14));
        },
        10));
    const double t0 = monotonic_seconds();
    auto r = end_processes({{static_cast<std::uint32_t>(pid), process_start_ticks(pid).value_or(0), 0}}, 0.4);
    EXPECT_GE(monotonic_seconds() - t0, 0.4);
    EXPECT_EQ(r[0].outcome, EndOutcome::killed);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}
