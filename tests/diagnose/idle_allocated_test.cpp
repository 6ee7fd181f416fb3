// gpu_idle_allocated: the tracker the agent feeds every sample, on synthetic snapshots.
#include <gtest/gtest.h>

#include "diagnose/idle_allocated.hpp"

using namespace baton;
using namespace baton::diagnose;

namespace {

constexpr std::int64_t kIdleStart = 1764400000000;  // ms

// Slurm job 77 (alice) allocated GPUs 0 and 1, with a process on GPU 0 only; `util` per GPU.
Snapshot idle_at(double minutes, double util0, double util1) {
    Snapshot s;
    s.time_unix_ms = kIdleStart + static_cast<std::int64_t>(minutes * 60000);
    for (unsigned i = 0; i < 2; ++i) {
        GpuInfo g;
        g.index = i;
        g.utilization_percent = i == 0 ? util0 : util1;
        s.gpus.push_back(g);
    }
    JobInfo j;
    j.kind = JobKind::slurm;
    j.id = "77";
    j.label = "slurm:77";
    j.user = "alice";
    j.gpus = {0};
    j.allocated_gpus = {0, 1};
    s.jobs.push_back(j);
    return s;
}

}  // namespace

TEST(IdleAllocations, AnAllocatedGpuAtZeroForTheMinutesIsAFinding) {
    IdleAllocations t;
    EXPECT_TRUE(t.update(idle_at(0, 90, 0), 60).empty());
    EXPECT_TRUE(t.update(idle_at(30, 90, 0), 60).empty());
    auto f = t.update(idle_at(60, 90, 0), 60);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].rule, "gpu_idle_allocated");
    EXPECT_EQ(f[0].subject, "gpu:1");
    EXPECT_EQ(f[0].job, "slurm:77");
    EXPECT_EQ(f[0].severity, Severity::warning);
    EXPECT_EQ(f[0].summary,
              "slurm:77 (alice) has held GPU1, allocated to it, at 0 % for 60 minutes without a process on it");
    EXPECT_EQ(f[0].doc, "docs/findings.md#gpu_idle_allocated");
    f = t.update(idle_at(200, 90, 0), 60);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].summary.find("for 3.3 hours"), std::string::npos) << f[0].summary;
    // It works once: counted afresh.
    EXPECT_TRUE(t.update(idle_at(201, 90, 5), 60).empty());
    EXPECT_TRUE(t.update(idle_at(250, 90, 0), 60).empty());
    EXPECT_EQ(t.update(idle_at(311, 90, 0), 60).size(), 1u);
}

TEST(IdleAllocations, AGpuWithoutAReadingKeepsItsClockAndOffIsOff) {
    IdleAllocations t;
    t.update(idle_at(0, 0, 50), 10);
    Snapshot gap = idle_at(5, 0, 50);
    gap.gpus[0].utilization_percent.reset();  // MIG, or a reading that failed: not judged
    EXPECT_TRUE(t.update(gap, 10).empty());
    auto f = t.update(idle_at(10, 0, 50), 10);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].summary, "slurm:77 (alice) has held GPU0, allocated to it, at 0 % for 10 minutes");
    // Busy SM (GPM) while NVML's utilisation reads 0: not idle.
    Snapshot sm = idle_at(11, 0, 50);
    sm.gpus[0].sm_activity_percent = 12;
    EXPECT_TRUE(t.update(sm, 10).empty());
    // Off: nothing, however long.
    IdleAllocations off;
    off.update(idle_at(0, 0, 0), 0);
    EXPECT_TRUE(off.update(idle_at(1000, 0, 0), 0).empty());
    // A GPU used by nobody's job, or a job that ended: no finding, no clock kept.
    IdleAllocations none;
    Snapshot no_job = idle_at(0, 0, 0);
    no_job.jobs.clear();
    none.update(no_job, 1);
    no_job.time_unix_ms += 3600000;
    EXPECT_TRUE(none.update(no_job, 1).empty());
}
