// How well a job used what it was given: the tracker the agent feeds every sample, and the notes
// `baton jobstats` prints, on synthetic snapshots.
#include <gtest/gtest.h>

#include <algorithm>

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
