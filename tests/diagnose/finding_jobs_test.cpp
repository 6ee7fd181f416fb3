// A finding names the job behind its subject: the Slurm job, pod or service on a GPU or of a process.
#include <gtest/gtest.h>

#include "diagnose/finding_jobs.hpp"

using namespace baton;
using namespace baton::diagnose;

namespace {

JobInfo job(JobKind kind, const std::string& id, const std::string& label, std::vector<unsigned> gpus,
            std::vector<unsigned> allocated = {}) {
    JobInfo j;
    j.kind = kind;
    j.id = id;
    j.label = label;
    j.gpus = std::move(gpus);
    j.allocated_gpus = std::move(allocated);
    return j;
}

Snapshot shared_node() {
    Snapshot s;
    for (std::uint32_t pid : {10u, 20u, 30u}) {
        ProcessInfo p;
        p.pid = pid;
        s.processes.push_back(p);
    }
    s.processes[0].job = JobRef{JobKind::slurm, "7", "0", "", ""};
    s.processes[1].job = JobRef{JobKind::pod, "uid-1", "", "", ""};
    s.jobs = {job(JobKind::slurm, "7", "slurm:7", {0}, {0, 1}), job(JobKind::pod, "uid-1", "pod:ml/trainer", {0, 2})};
    return s;
}

}  // namespace

TEST(FindingJobs, AGpuOrAProcessNamesItsJobs) {
    const Snapshot s = shared_node();
    EXPECT_EQ(job_of_subject(s, "gpu:0"), "pod:ml/trainer,slurm:7");  // two jobs share it
    EXPECT_EQ(job_of_subject(s, "gpu:1"), "slurm:7");                 // allocated, idle
    EXPECT_EQ(job_of_subject(s, "gpu:2"), "pod:ml/trainer");
    EXPECT_EQ(job_of_subject(s, "gpu:3"), "");
    EXPECT_EQ(job_of_subject(s, "gpu:2/mig:3"), "") << "no process known on that MIG device";
    EXPECT_EQ(job_of_subject(s, "pid:10"), "slurm:7");
    EXPECT_EQ(job_of_subject(s, "pid:20"), "pod:ml/trainer");
    EXPECT_EQ(job_of_subject(s, "pid:30"), "");  // a process of no job
    EXPECT_EQ(job_of_subject(s, "pid:99"), "");  // gone
    for (const char* other : {"host", "disk:nvme0n1", "job 12", "gpu:", "gpu:-1", "gpu:1x", "pid:", "pid:99999999999",
                              "gpu:99999999999999999999", "gpu:/mig:1", "gpu:1/mig"})
        EXPECT_EQ(job_of_subject(s, other), "") << other;
    EXPECT_EQ(job_of_subject(Snapshot{}, "gpu:0"), "");
}

// A MIG device's finding names the jobs on that MIG device only, not those on the GPU's others.
TEST(FindingJobs, AMigDeviceNamesItsOwnJobsAlone) {
    Snapshot s = shared_node();
    GpuInfo g;
    g.index = 2;
    g.mig_mode = true;
    auto on = [](std::uint32_t pid, unsigned gi) {
        GpuProcess p;
        p.pid = pid;
        p.gpu_instance_id = gi;
        p.compute_instance_id = 0;
        return p;
    };
    g.processes = {on(10, 3), on(20, 4), on(30, 4)};
    s.gpus.push_back(g);
    EXPECT_EQ(job_of_subject(s, "gpu:2/mig:3"), "slurm:7");
    EXPECT_EQ(job_of_subject(s, "gpu:2/mig:4"), "pod:ml/trainer") << "pid 30 is in no job";
    EXPECT_EQ(job_of_subject(s, "gpu:2/mig:5"), "");
    EXPECT_EQ(job_of_subject(s, "gpu:2"), "pod:ml/trainer") << "the whole GPU: the jobs that use or hold it";
    EXPECT_EQ(job_of_subject(s, "gpu:2/mig:x"), "");
}

TEST(FindingJobs, DiagnoseNamesTheJobsOfItsFindings) {
    std::vector<Finding> fs(3);
    fs[0].subject = "gpu:1";
    fs[1].subject = "host";
    fs[2].subject = "pid:10";
    fs[2].job = "slurm:1";  // already named by its rule: kept
    name_jobs(fs, shared_node());
    EXPECT_EQ(fs[0].job, "slurm:7");
    EXPECT_EQ(fs[1].job, "");
    EXPECT_EQ(fs[2].job, "slurm:1");
}
