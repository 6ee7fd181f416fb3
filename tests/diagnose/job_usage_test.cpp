// How well a job used what it was given: the tracker the agent feeds every sample, and the notes
// `baton jobstats` prints, on synthetic snapshots.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "diagnose/process_trees.hpp"
#include "diagnose/job_usage.hpp"

using namespace baton;
using namespace baton::diagnose;

namespace {

constexpr std::int64_t kJobStart = 1764400000000;  // ms
constexpr std::uint64_t kJobGiB = 1ull << 30;

struct JobProc {
    std::uint32_t pid;
    double cpu_seconds;
    std::uint64_t rss;
    std::int64_t started_ms = kJobStart;  // when the process began
};

// Slurm job 77 on node1 (16 cores, 64 GiB allocated of 256 GiB, 4 GPUs of 80 GiB allocated) at
// `seconds` after kJobStart, with these processes and GPU utilisations / memory used.
Snapshot job_at(double seconds, const std::vector<JobProc>& procs, const std::vector<double>& util,
                const std::vector<std::uint64_t>& gpu_used, bool job_present = true) {
    Snapshot s;
    s.time_unix_ms = kJobStart + static_cast<std::int64_t>(seconds * 1000);
    s.host.hostname = "node1";
    s.cpu.cores.resize(32);
    s.memory.total_bytes = 256 * kJobGiB;
    for (unsigned i = 0; i < util.size(); ++i) {
        GpuInfo g;
        g.index = i;
        g.uuid = "GPU-" + std::to_string(i);
        g.minor_number = i;
        g.utilization_percent = util[i];
        g.memory_total_bytes = 80 * kJobGiB;
        g.memory_used_bytes = gpu_used[i];
        s.gpus.push_back(g);
    }
    JobInfo j;
    j.kind = JobKind::slurm;
    j.id = "77";
    j.label = "slurm:77";
    j.name = "train";
    j.user = "alice";
    j.allocated_cpus = 16;
    j.allocated_memory_bytes = 64 * kJobGiB;
    j.time_limit_seconds = 24 * 3600;
    j.allocated_gpus = {0, 1, 2, 3};
    j.gpus = {0};
    for (const JobProc& p : procs) {
        ProcessInfo pi;
        pi.pid = p.pid;
        pi.start_ticks = p.pid * 10;
        pi.start_time_ms = p.started_ms;
        pi.cpu_seconds_total = p.cpu_seconds;
        pi.rss_bytes = p.rss;
        s.processes.push_back(pi);
        j.pids.push_back(p.pid);
    }
    std::sort(s.processes.begin(), s.processes.end(),
              [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
    std::sort(j.pids.begin(), j.pids.end());
    if (job_present) s.jobs.push_back(j);
    return s;
}

bool job_note(const std::vector<std::string>& notes, const std::string& text) {
    return std::any_of(notes.begin(), notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST(JobUsage, CpuTimeMemoryAndGpusAccumulateWhileTheJobRuns) {
    JobUsageTracker t;
    // Two processes started with the job; a third, short-lived, comes and goes.
    t.update(job_at(1, {{100, 1, 2 * kJobGiB}, {101, 0.5, kJobGiB}}, {90, 0, 0, 0}, {40 * kJobGiB, 0, 0, 0}), {});
    t.update(job_at(2, {{100, 3, 3 * kJobGiB}, {101, 1, kJobGiB}, {102, 2, 4 * kJobGiB, kJobStart + 1500}},
                    {80, 0, 0, 0}, {50 * kJobGiB, 0, 0, 0}),
             {});
    t.update(job_at(601, {{100, 400, 2 * kJobGiB}, {101, 100, kJobGiB}}, {70, 0, 0, 0}, {45 * kJobGiB, 0, 0, 0}), {});
    std::optional<JobUse> u = t.find("77");
    ASSERT_TRUE(u.has_value());
    EXPECT_EQ(u->label, "slurm:77");
    EXPECT_EQ(t.find("slurm:77")->label, "slurm:77");
    EXPECT_FALSE(t.find("78").has_value());
    ASSERT_EQ(u->nodes.size(), 1u);
    const NodeUse& n = u->nodes[0];
    EXPECT_EQ(n.host, "node1");
    EXPECT_EQ(n.samples, 3u);
    EXPECT_DOUBLE_EQ(n.cpu_seconds, 400 + 100 + 2);  // the ended process's 2 s kept
    EXPECT_EQ(n.memory_peak_bytes, 8 * kJobGiB);     // 3 + 1 + 4 at the second sample
    EXPECT_EQ(n.cpus, 16u);
    ASSERT_EQ(n.gpus.size(), 4u);
    EXPECT_TRUE(n.gpus[0].allocated);
    EXPECT_DOUBLE_EQ(*n.gpus[0].utilization_percent, 80);
    EXPECT_EQ(n.gpus[0].memory_peak_bytes, 50 * kJobGiB);
    EXPECT_DOUBLE_EQ(*n.gpus[1].utilization_percent, 0);
    EXPECT_FALSE(u->ended);
    EXPECT_DOUBLE_EQ(u->runtime_seconds(), 600);
}

TEST(JobUsage, AProcessFoundAlreadyRunningCountsFromWhenItWasFound) {
    JobUsageTracker t;
    // The agent started long after the job: its process had used 5000 s of CPU before.
    t.update(job_at(0, {{100, 5000, kJobGiB, kJobStart - 3600000}}, {0, 0, 0, 0}, {0, 0, 0, 0}), {});
    t.update(job_at(10, {{100, 5010, kJobGiB, kJobStart - 3600000}}, {0, 0, 0, 0}, {0, 0, 0, 0}), {});
    EXPECT_DOUBLE_EQ(t.find("77")->nodes[0].cpu_seconds, 10);
}

TEST(JobUsage, AnEndedJobIsKeptForItsHourThenForgottenAndTheCountIsBounded) {
    JobUsageTracker t(/*keep_seconds=*/60, /*max_ended=*/1);
    t.update(job_at(0, {{100, 1, kJobGiB}}, {50, 0, 0, 0}, {kJobGiB, 0, 0, 0}), {});
    t.update(job_at(5, {{100, 6, kJobGiB}}, {50, 0, 0, 0}, {kJobGiB, 0, 0, 0}), {});
    t.update(job_at(6, {}, {0, 0, 0, 0}, {0, 0, 0, 0}, /*job_present=*/false), {});
    std::optional<JobUse> u = t.find("77");
    ASSERT_TRUE(u.has_value());
    EXPECT_TRUE(u->ended);
    EXPECT_DOUBLE_EQ(u->nodes[0].cpu_seconds, 6);
    EXPECT_DOUBLE_EQ(u->runtime_seconds(), 5);  // to the last sample that saw it
    t.update(job_at(60, {}, {0, 0, 0, 0}, {0, 0, 0, 0}, false), {});
    EXPECT_TRUE(t.find("77").has_value());
    t.update(job_at(66, {}, {0, 0, 0, 0}, {0, 0, 0, 0}, false), {});
    EXPECT_FALSE(t.find("77").has_value());
    EXPECT_EQ(t.size(), 0u);
}

TEST(JobUsage, AGpuSharedWithOthersCountsOnlyTheJobsOwnMemory) {
    JobUsageTracker t;
    Snapshot s = job_at(1, {{100, 1, kJobGiB}}, {60}, {70 * kJobGiB});
    s.jobs[0].allocated_gpus.clear();  // no scheduler: the GPU is its because its process uses it
    GpuProcess mine, other;
    mine.pid = 100;
    mine.used_memory_bytes = 10 * kJobGiB;
    other.pid = 999;
    other.used_memory_bytes = 60 * kJobGiB;
    s.gpus[0].processes = {mine, other};
    t.update(s, {});
    const std::optional<JobUse> u = t.find("77");  // a copy: a reference into the temporary would dangle
    ASSERT_TRUE(u);
    const GpuUse& g = u->nodes[0].gpus.at(0);
    EXPECT_FALSE(g.allocated);
    EXPECT_EQ(g.memory_peak_bytes, 10 * kJobGiB);
}

TEST(JobUsage, FindingsThatNameTheJobAreKeptOnceEach) {
    JobUsageTracker t;
    Finding f;
    f.rule = "gpu_idle_allocated";
    f.severity = Severity::warning;
    f.job = "slurm:77";
    f.summary = "slurm:77 (alice) has held GPU 1 idle";
    Finding other = f;
    other.job = "slurm:78";
    t.update(job_at(1, {{100, 1, kJobGiB}}, {0, 0, 0, 0}, {0, 0, 0, 0}), {f, other});
    t.update(job_at(2, {{100, 1, kJobGiB}}, {0, 0, 0, 0}, {0, 0, 0, 0}), {f});
    const std::vector<JobFindingSeen> seen = t.find("77")->findings;
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].rule, "gpu_idle_allocated");
    EXPECT_EQ(seen[0].summary, f.summary);
    EXPECT_EQ(seen[0].first_unix_ms, kJobStart + 1000);
}

TEST(JobUsage, NotesSayWhatToRequestNextTime) {
    JobUsageTracker t;
    // An hour on 1 of 4 GPUs at 30 %, 8 GiB of its 80, 2 of 16 cores, 6 GiB of 64: every note.
    t.update(job_at(0, {{100, 0, 6 * kJobGiB}}, {30, 0, 0, 0}, {8 * kJobGiB, 0, 0, 0}), {});
    t.update(job_at(3600, {{100, 7200, 6 * kJobGiB}}, {30, 0, 0, 0}, {8 * kJobGiB, 0, 0, 0}), {});
    t.update(job_at(3601, {}, {0, 0, 0, 0}, {0, 0, 0, 0}, false), {});
    const std::vector<std::string> notes = job_use_notes(*t.find("77"));
    EXPECT_TRUE(job_note(notes, "asked for 4 GPUs, used 1: request 1")) << ::testing::PrintToString(notes);
    EXPECT_TRUE(job_note(notes, "GPU utilisation averaged 30 %")) << ::testing::PrintToString(notes);
    EXPECT_TRUE(job_note(notes, "GPU memory peaked at 10 % (8.0 GiB of 80 GiB): a smaller GPU or a MIG slice fits"))
        << ::testing::PrintToString(notes);
    EXPECT_TRUE(job_note(notes, "used 2.0 of 16 cores on average (12 %): request 3"))
        << ::testing::PrintToString(notes);
    EXPECT_TRUE(job_note(notes, "memory peaked at 6.0 GiB of 64.0 GiB (9 %): request 8G per node"))
        << ::testing::PrintToString(notes);
    EXPECT_TRUE(job_note(notes, "ran 1.0 h of a 24.0 h limit")) << ::testing::PrintToString(notes);
}

TEST(JobUsage, AJobThatUsedWhatItAskedForHasNoNotesAndIdleGpusAreSaidPlainly) {
    JobUsageTracker t;
    t.update(
        job_at(0, {{100, 0, 50 * kJobGiB}}, {95, 96, 97, 98}, {70 * kJobGiB, 70 * kJobGiB, 70 * kJobGiB, 70 * kJobGiB}),
        {});
    t.update(job_at(3600, {{100, 3600 * 15, 50 * kJobGiB}}, {95, 96, 97, 98},
                    {70 * kJobGiB, 70 * kJobGiB, 70 * kJobGiB, 70 * kJobGiB}),
             {});
    JobUse busy = *t.find("77");
    busy.time_limit_seconds = 4000;
    EXPECT_TRUE(job_use_notes(busy).empty()) << ::testing::PrintToString(job_use_notes(busy));

    JobUsageTracker idle;
    idle.update(job_at(0, {{100, 0, kJobGiB}}, {0, 0, 0, 0}, {0, 0, 0, 0}), {});
    idle.update(job_at(10, {{100, 1, kJobGiB}}, {0, 0, 0, 0}, {0, 0, 0, 0}), {});
    const std::vector<std::string> notes = job_use_notes(*idle.find("77"));
    EXPECT_TRUE(job_note(notes, "asked for 4 GPUs and used none")) << ::testing::PrintToString(notes);
    // Ten seconds: too short to judge cores, memory or time.
    EXPECT_EQ(notes.size(), 1u) << ::testing::PrintToString(notes);
}

TEST(JobUsage, NodesMergeSideBySide) {
    JobUsageTracker a, b;
    Snapshot sa = job_at(0, {{100, 0, kJobGiB}}, {90, 90, 0, 0}, {kJobGiB, kJobGiB, 0, 0});
    Snapshot sb = sa;
    sb.host.hostname = "node2";
    sb.time_unix_ms += 2000;
    a.update(sa, {});
    b.update(sb, {});
    JobUse first = *a.find("77"), second = *b.find("77");
    second.name = "";
    second.ended = true;
    const JobUse m = merge_nodes({second, first});
    ASSERT_EQ(m.nodes.size(), 2u);
    EXPECT_EQ(m.nodes[0].host, "node1");
    EXPECT_EQ(m.nodes[1].host, "node2");
    EXPECT_FALSE(m.ended);  // node1 still runs it
    EXPECT_EQ(m.name, "train");
    EXPECT_DOUBLE_EQ(m.runtime_seconds(), 2);
    EXPECT_TRUE(merge_nodes({}).nodes.empty());
}

TEST(JobUsage, HoursAreIntegratedFromTheSamplesAndAGapIsNotCounted) {
    JobUsageTracker t;
    // Four GPUs allocated, GPU 0 at 50 % then 100 %, the others at 0; samples 2 s apart.
    t.update(job_at(0, {{100, 0, kJobGiB}}, {50, 0, 0, 0}, {kJobGiB, 0, 0, 0}), {});
    t.update(job_at(2, {{100, 2, kJobGiB}}, {50, 0, 0, 0}, {kJobGiB, 0, 0, 0}), {});
    t.update(job_at(4, {{100, 4, kJobGiB}}, {100, 0, 0, 0}, {kJobGiB, 0, 0, 0}), {});
    // The agent stopped for 10 minutes: that time is not the job's seen time.
    t.update(job_at(604, {{100, 5, kJobGiB}}, {100, 0, 0, 0}, {kJobGiB, 0, 0, 0}), {});
    t.update(job_at(606, {{100, 6, kJobGiB}}, {100, 0, 0, 0}, {kJobGiB, 0, 0, 0}), {});
    const NodeUse n = t.find("77")->nodes.at(0);
    EXPECT_DOUBLE_EQ(n.seconds, 6);  // 2 + 2 + 2: the first sample and the gap add nothing
    EXPECT_DOUBLE_EQ(n.gpu_seconds, 4 * 6);
    EXPECT_DOUBLE_EQ(n.cpu_seconds_allocated, 16 * 6);
    EXPECT_DOUBLE_EQ(n.gpus.at(0).seconds, 6);
    EXPECT_DOUBLE_EQ(n.gpus.at(0).busy_seconds, 2 * 0.5 + 2 * 1 + 2 * 1);
    EXPECT_DOUBLE_EQ(n.gpus.at(1).busy_seconds, 0);
    EXPECT_DOUBLE_EQ(n.gpus.at(0).sm_seconds, 0);  // SM activity was never read
    EXPECT_DOUBLE_EQ(n.cpu_seconds, 6);
}

TEST(JobUsage, AQueuedJobIsItsOwnAndLeavesTheSessionThatHoldsItsProcesses) {
    JobUsageTracker t;
    for (int tick = 0; tick < 3; ++tick) {
        Snapshot s;
        s.time_unix_ms = kJobStart + tick * 1000;
        s.host.hostname = "box";
        for (unsigned i = 0; i < 2; ++i) {
            GpuInfo g;
            g.index = i;
            g.uuid = "GPU-" + std::to_string(i);
            g.utilization_percent = i == 0 ? 80 : 20;
            g.sm_activity_percent = i == 0 ? 40 : 10;
            g.memory_total_bytes = 80 * kJobGiB;
            g.memory_used_bytes = kJobGiB;
            s.gpus.push_back(g);
        }
        // alice's session: the queue's job (pids 10, 11 on GPU 0) and her notebook (pid 20 on GPU 1).
        for (std::uint32_t pid : {10u, 11u, 20u}) {
            ProcessInfo p;
            p.pid = pid;
            p.start_ticks = pid;
            p.start_time_ms = kJobStart;
            p.rss_bytes = kJobGiB;
            if (pid == 11) p.gpu_indices = {0};
            if (pid == 20) p.gpu_indices = {1};
            s.processes.push_back(p);
        }
        JobInfo session;
        session.kind = JobKind::user;
        session.id = "1000";
        session.label = "user:alice";
        session.user = "alice";
        session.pids = {10, 11, 20};
        session.gpus = {0, 1};
        s.jobs.push_back(session);
        OtherJob q{"queue", {}, std::nullopt};
        q.info.id = "12";
        q.info.label = "queue:12";
        q.info.user = "alice";
        q.info.pids = {10, 11};
        q.info.gpus = {0};
        q.info.allocated_gpus = {0};
        q.info.allocated_cpus = 4;
        t.update(s, {}, {q});
    }
    const JobUse queued = *t.find("queue:12");
    EXPECT_EQ(queued.kind, "queue");
    ASSERT_EQ(queued.nodes.at(0).gpus.size(), 1u);
    EXPECT_DOUBLE_EQ(queued.nodes.at(0).gpu_seconds, 2);
    EXPECT_DOUBLE_EQ(queued.nodes.at(0).gpus.at(0).busy_seconds, 2 * 0.8);
    EXPECT_DOUBLE_EQ(queued.nodes.at(0).gpus.at(0).sm_busy_seconds, 2 * 0.4);
    EXPECT_DOUBLE_EQ(queued.nodes.at(0).cpu_seconds_allocated, 2 * 4);
    EXPECT_EQ(queued.nodes.at(0).memory_peak_bytes, 2 * kJobGiB);
    // The session keeps only the notebook: GPU 1, one process.
    const JobUse session = *t.find("user:alice");
    ASSERT_EQ(session.nodes.at(0).gpus.size(), 1u);
    EXPECT_EQ(session.nodes.at(0).gpus.at(0).index, 1u);
    EXPECT_DOUBLE_EQ(session.nodes.at(0).gpu_seconds, 2);
    EXPECT_DOUBLE_EQ(session.nodes.at(0).gpus.at(0).busy_seconds, 2 * 0.2);
    EXPECT_EQ(session.nodes.at(0).memory_peak_bytes, kJobGiB);
}

TEST(JobUsage, AGpuHolderInNoJobCountsForItsOwnerWithItsChildren) {
    JobUsageTracker t;
    for (int tick = 0; tick < 3; ++tick) {
        Snapshot s;
        s.time_unix_ms = kJobStart + tick * 500;
        GpuInfo g;
        g.index = 0;
        g.uuid = "GPU-0";
        g.utilization_percent = 30;
        s.gpus.push_back(g);
        // bob's trainer (pid 50, on GPU 0) and its DataLoader worker (51); carol's shell (60) holds nothing.
        for (auto [pid, ppid, user] :
             {std::tuple{50u, 1u, "bob"}, std::tuple{51u, 50u, "bob"}, std::tuple{60u, 1u, "carol"}}) {
            ProcessInfo p;
            p.pid = pid;
            p.ppid = ppid;
            p.uid = pid == 60 ? 1002 : 1001;
            p.user = user;
            p.start_ticks = pid;
            p.start_time_ms = kJobStart;
            p.cpu_seconds_total = tick;
            p.rss_bytes = kJobGiB;
            if (pid == 50) p.gpu_indices = {0};
            s.processes.push_back(p);
        }
        t.update(s, {});
    }
    ASSERT_EQ(t.size(), 1u);
    const JobUse bob = *t.find("user:bob");
    EXPECT_EQ(bob.kind, "user");
    EXPECT_EQ(bob.id, "1001");
    EXPECT_EQ(bob.nodes.at(0).memory_peak_bytes, 2 * kJobGiB);  // the worker too
    EXPECT_DOUBLE_EQ(bob.nodes.at(0).gpu_seconds, 1);
    EXPECT_DOUBLE_EQ(bob.nodes.at(0).gpus.at(0).busy_seconds, 0.3);
}

TEST(JobUsage, ANewJobsFirstSampleCountsFromItsStart) {
    JobUsageTracker t;
    auto tick = [&](std::int64_t ms, bool with_job) {
        Snapshot s;
        s.time_unix_ms = kJobStart + ms;
        std::vector<OtherJob> others;
        if (with_job) {
            ProcessInfo p;
            p.pid = 9;
            p.start_time_ms = kJobStart + 600;
            s.processes.push_back(p);
            OtherJob q{"queue", {}, kJobStart + 600};  // started between the first two samples
            q.info.label = "queue:5";
            q.info.pids = {9};
            q.info.allocated_cpus = 1;
            others.push_back(q);
        }
        t.update(s, {}, others);
    };
    tick(0, false);
    tick(1000, true);
    tick(2000, true);
    EXPECT_DOUBLE_EQ(t.find("queue:5")->nodes.at(0).seconds, 0.4 + 1);
    EXPECT_DOUBLE_EQ(t.find("queue:5")->nodes.at(0).cpu_seconds_allocated, 1.4);
}

TEST(JobUsage, EachQueuedJobsTreeIsWalkedApartInOnePass) {
    Snapshot s;
    // 1 -> 10 -> 11 -> 12 (a setsid child keeps its parent), 1 -> 20 -> 21; 30 alone; 40 is its own parent.
    for (auto [pid, ppid] : {std::pair{1u, 0u}, std::pair{10u, 1u}, std::pair{11u, 10u}, std::pair{12u, 11u},
                             std::pair{20u, 1u}, std::pair{21u, 20u}, std::pair{30u, 1u}, std::pair{40u, 40u}}) {
        ProcessInfo p;
        p.pid = pid;
        p.ppid = ppid;
        s.processes.push_back(p);
    }
    const auto trees = process_tree_each(s, {20, 10, 99, 40, 11});
    ASSERT_EQ(trees.size(), 5u);
    auto pids = [](const std::vector<const ProcessInfo*>& t) {
        std::vector<std::uint32_t> out;
        for (const ProcessInfo* p : t) out.push_back(p->pid);
        return out;
    };
    EXPECT_EQ(pids(trees[0]), (std::vector<std::uint32_t>{20, 21}));
    EXPECT_EQ(pids(trees[1]), (std::vector<std::uint32_t>{10, 11, 12}));
    EXPECT_TRUE(trees[2].empty());  // no such process
    EXPECT_EQ(pids(trees[3]), (std::vector<std::uint32_t>{40}));
    EXPECT_TRUE(trees[4].empty());  // already in job 10's tree
}
