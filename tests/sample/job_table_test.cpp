// The jobs of a snapshot: processes grouped by the job their cgroup names, GPUs joined, Slurm jobs
// named from a task's environment (a fixture /proc) or by a stand-in scontrol on the worker thread,
// which never holds up a tick (one that hangs is cut at its deadline and asked again later).
#include <gtest/gtest.h>

#include <string>
#include <sys/stat.h>

#include "core/clock.hpp"
#include "sample/jobs/job_table.hpp"
#include "test_support.hpp"

using namespace baton;
using jobs::JobTable;
using jobs::JobTableOptions;

namespace {

ProcessInfo proc(std::uint32_t pid, JobKind kind, const std::string& id, const std::string& user = "alice") {
    ProcessInfo p;
    p.pid = pid;
    p.user = user;
    p.job.kind = kind;
    p.job.id = id;
    return p;
}

std::string task_environ(std::initializer_list<std::string> vars) {
    std::string out;
    for (const std::string& v : vars) out += v + '\0';
    return out;
}

// A stand-in scontrol: answers for job 77 with the line below (after `delay` seconds), fails otherwise;
// counts its calls in DIR/calls.
std::string fake_scontrol(const test::TempDir& d, const std::string& delay = "0") {
    d.write("scontrol",
            "#!/bin/sh\necho x >> " + d.path() + "/calls\nsleep " + delay +
                "\n[ \"$5\" = 77 ] || { echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1; }\n"
                "echo 'JobId=77 JobName=sweep UserId=bob(1001) Account=nlp Partition=a100 TimeLimit=02:00:00 "
                "StartTime=2026-12-04T10:00:00 Nodes=box CPU_IDs=0-3 Mem=8000 GRES=gpu:1(IDX:1)'\n");
    chmod((d.path() + "/scontrol").c_str(), 0755);
    return d.path() + "/scontrol";
}

int calls(const test::TempDir& d) {
    const std::string s = test::read_text(d.path() + "/calls");
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

Snapshot two_gpus() {
    Snapshot s;
    s.host.hostname = "box.cluster";
    for (unsigned i = 0; i < 2; ++i) {
        GpuInfo g;
        g.index = i;
        g.minor_number = i;
        s.gpus.push_back(g);
    }
    return s;
}

}  // namespace

TEST(JobTable, GroupsProcessesAndListsOnlyJobsWorthListing) {
    test::TempDir d;
    JobTableOptions o;
    o.proc_root = d.path();
    o.scontrol = "";
    JobTable t(o);
    Snapshot s = two_gpus();
    s.processes = {proc(10, JobKind::slurm, "5"),
                   proc(11, JobKind::slurm, "5"),
                   proc(12, JobKind::none, ""),
                   proc(13, JobKind::service, "sshd.service", "root"),
                   proc(14, JobKind::service, "nb.service"),
                   proc(15, JobKind::user, "1000"),
                   proc(16, JobKind::container, std::string(64, 'a'))};
    s.processes[1].gpu_indices = {1, 0};
    s.processes[4].gpu_indices = {1};
    s.processes[5].gpu_indices = {0};
    t.update(s, 0);
    ASSERT_EQ(s.jobs.size(), 4u);  // sshd.service uses no GPU: not a job
    EXPECT_EQ(s.jobs[0].label, "slurm:5");
    EXPECT_EQ(s.jobs[0].pids, (std::vector<std::uint32_t>{10, 11}));
    EXPECT_EQ(s.jobs[0].gpus, (std::vector<unsigned>{0, 1}));
    EXPECT_EQ(s.jobs[0].names_from, "");  // no environment, no scontrol
    EXPECT_EQ(s.jobs[1].label, "container:aaaaaaaaaaaa");
    EXPECT_EQ(s.jobs[2].label, "service:nb.service");
    EXPECT_EQ(s.jobs[2].name, "nb.service");
    EXPECT_EQ(s.jobs[3].label, "user:alice");
    // The table follows the processes: gone, unlisted.
    s.processes.resize(1);
    t.update(s, 1);
    ASSERT_EQ(s.jobs.size(), 1u);
    EXPECT_EQ(s.jobs[0].pids, std::vector<std::uint32_t>{10});
}

TEST(JobTable, NamesASlurmJobFromATasksEnvironment) {
    test::TempDir d;
    // pid 20 is slurmstepd (slurmd's environment), 21 a task of job 5, 22 a task of another job's
    // environment that wandered into this cgroup.
    d.write("20/environ", task_environ({"PATH=/usr/bin"}));
    d.write("22/environ", task_environ({"SLURM_JOB_ID=6", "SLURM_JOB_NAME=other"}));
    d.write("21/environ", task_environ({"SLURM_JOB_ID=5", "SLURM_JOB_NAME=train", "SLURM_JOB_USER=carol",
                                        "SLURM_JOB_ACCOUNT=ml", "SLURM_JOB_PARTITION=gpu", "SLURM_JOB_GPUS=1",
                                        "SLURM_CPUS_ON_NODE=4", "SLURM_MEM_PER_NODE=2048"}));
    JobTableOptions o;
    o.proc_root = d.path();
    o.scontrol = "";
    JobTable t(o);
    Snapshot s = two_gpus();
    s.processes = {proc(20, JobKind::slurm, "5", "root"), proc(22, JobKind::slurm, "5")};
    t.update(s, 0);
    EXPECT_EQ(s.jobs[0].names_from, "");
    s.processes.push_back(proc(21, JobKind::slurm, "5"));  // the task appears a tick later
    t.update(s, 1);
    const JobInfo& j = s.jobs[0];
    EXPECT_EQ(j.names_from, "environ");
    EXPECT_EQ(j.name, "train");
    EXPECT_EQ(j.user, "carol");
    EXPECT_EQ(j.account, "ml");
    EXPECT_EQ(j.partition, "gpu");
    EXPECT_EQ(j.allocated_cpus, 4u);
    EXPECT_EQ(j.allocated_memory_bytes, 2048ull << 20);
    EXPECT_EQ(j.allocated_gpus, std::vector<unsigned>{1});
    // Kept while the job is seen, though its environment is gone.
    d.remove("21/environ");
    t.update(s, 2);
    EXPECT_EQ(s.jobs[0].name, "train");
}

TEST(JobTable, AsksScontrolOncePerJobOffTheSamplingThread) {
    test::TempDir d;
    JobTableOptions o;
    o.proc_root = d.path();
    o.scontrol = fake_scontrol(d, "0.3");
    JobTable t(o);
    Snapshot s = two_gpus();
    s.processes = {proc(30, JobKind::slurm, "77")};
    const double before = monotonic_seconds();
    t.update(s, 0);
    EXPECT_LT(monotonic_seconds() - before, 0.25);  // the tick did not wait for scontrol
    EXPECT_EQ(s.jobs[0].names_from, "");
    t.settle(s, 1, 5);
    const JobInfo& j = s.jobs[0];
    EXPECT_EQ(j.names_from, "scontrol");
    EXPECT_EQ(j.name, "sweep");
    EXPECT_EQ(j.user, "bob");
    EXPECT_EQ(j.account, "nlp");
    EXPECT_EQ(j.partition, "a100");
    EXPECT_EQ(j.allocated_cpus, 4u);
    EXPECT_EQ(j.allocated_gpus, std::vector<unsigned>{1});  // on the node "box" (box.cluster's short name)
    for (int i = 2; i < 10; ++i) t.update(s, i);
    EXPECT_EQ(calls(d), 1);
}

TEST(JobTable, AFailedOrHungLookupIsRetriedLaterNotEveryTick) {
    test::TempDir d;
    JobTableOptions o;
    o.proc_root = d.path();
    o.scontrol = fake_scontrol(d, "30");  // hangs past the deadline
    o.lookup_timeout_seconds = 0.3;
    o.retry_seconds = 60;
    JobTable t(o);
    Snapshot s = two_gpus();
    s.processes = {proc(40, JobKind::slurm, "77"), proc(41, JobKind::slurm, "8")};
    const double before = monotonic_seconds();
    t.update(s, 0);
    t.settle(s, 0.5, 5);
    EXPECT_LT(monotonic_seconds() - before, 3.0);
    EXPECT_EQ(s.jobs[0].names_from, "");
    for (int i = 1; i < 30; ++i) t.update(s, i);
    t.settle(s, 30, 5);
    EXPECT_EQ(calls(d), 2);  // once per job
    t.update(s, 61);         // past retry_seconds: asked again
    t.settle(s, 61, 5);
    EXPECT_EQ(calls(d), 4);
}

TEST(JobTable, DestroyedWhileALookupHangsEndsByItsDeadline) {
    test::TempDir d;
    JobTableOptions o;
    o.proc_root = d.path();
    o.scontrol = fake_scontrol(d, "30");
    o.lookup_timeout_seconds = 0.5;
    const double before = monotonic_seconds();
    {
        JobTable t(o);
        Snapshot s = two_gpus();
        s.processes = {proc(50, JobKind::slurm, "77")};
        t.update(s, 0);
    }
    EXPECT_LT(monotonic_seconds() - before, 5.0);
}
