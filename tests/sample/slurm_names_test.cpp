// A Slurm job's names from a task's environment and from scontrol's one-line form, as Slurm 22.05
// writes them; time and index formats; hostile text.
#include <gtest/gtest.h>

#include <string>

#include "sample/jobs/slurm_names.hpp"

using namespace baton::jobs;

namespace {

std::string environ_of(std::initializer_list<std::string> vars) {
    std::string out;
    for (const std::string& v : vars) out += v + '\0';
    return out;
}

// scontrol show job -o -d 4242 (Slurm 22.05, a one-node job with two GPUs), cut to its fields.
const char* kScontrol =
    "JobId=4242 JobName=train resnet UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A Priority=1 "
    "Nice=0 Account=vision QOS=normal JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 "
    "BatchFlag=1 Reboot=0 ExitCode=0:0 DerivedExitCode=0:0 RunTime=00:12:03 TimeLimit=1-00:00:00 "
    "TimeMin=N/A SubmitTime=2026-12-04T10:00:00 EligibleTime=2026-12-04T10:00:00 "
    "StartTime=2026-12-04T10:00:01 EndTime=2026-12-05T10:00:01 Partition=gpu AllocNode:Sid=login1:1234 "
    "NodeList=node7 BatchHost=node7 NumNodes=1 NumCPUs=8 NumTasks=1 CPUs/Task=8 "
    "TRES=cpu=8,mem=64000M,node=1,billing=8,gres/gpu=2 Nodes=node7 CPU_IDs=0-7 Mem=64000 "
    "GRES=gpu:a100:2(IDX:1,3) MinCPUsNode=8 Command=/home/alice/train.sh WorkDir=/home/alice Power=\n";

}  // namespace

TEST(SlurmNames, FromATasksEnvironment) {
    SlurmNames n =
        parse_slurm_environ(environ_of({"PATH=/usr/bin", "SLURM_JOB_ID=4242", "SLURM_JOB_NAME=train",
                                        "SLURM_JOB_USER=alice", "SLURM_JOB_ACCOUNT=vision", "SLURM_JOB_PARTITION=gpu",
                                        "SLURM_CPUS_ON_NODE=8", "SLURM_MEM_PER_NODE=64000", "SLURM_JOB_GPUS=1,3"}));
    EXPECT_EQ(n.job_id, "4242");
    EXPECT_EQ(n.name, "train");
    EXPECT_EQ(n.user, "alice");
    EXPECT_EQ(n.account, "vision");
    EXPECT_EQ(n.partition, "gpu");
    EXPECT_EQ(n.cpus, 8u);
    EXPECT_EQ(n.memory_bytes, 64000ull << 20);
    ASSERT_TRUE(n.gpus);
    EXPECT_EQ(*n.gpus, (std::vector<unsigned>{1, 3}));
    // Memory per CPU, the old SLURM_JOBID, and no Slurm at all.
    SlurmNames per_cpu = parse_slurm_environ(
        environ_of({"SLURM_JOBID=7", "SLURM_CPUS_ON_NODE=4", "SLURM_MEM_PER_CPU=1000", "SLURM_STEP_GPUS=0"}));
    EXPECT_EQ(per_cpu.job_id, "7");
    EXPECT_EQ(per_cpu.memory_bytes, 4000ull << 20);
    EXPECT_EQ(*per_cpu.gpus, std::vector<unsigned>{0});
    EXPECT_EQ(parse_slurm_environ(environ_of({"HOME=/root", "SLURM_JOB_NAME=x"})).job_id, "");
    EXPECT_EQ(parse_slurm_environ("").job_id, "");
}

TEST(SlurmNames, HostileEnvironmentValuesAreDropped) {
    SlurmNames n = parse_slurm_environ(
        environ_of({"SLURM_JOB_ID=12", "SLURM_JOB_NAME=a\"b\nc\x1b[2J", "SLURM_JOB_USER=" + std::string(300, 'u'),
                    "SLURM_JOB_GPUS=0-99999999", "SLURM_CPUS_ON_NODE=-1", "SLURM_MEM_PER_NODE=99999999999999999999",
                    "SLURM_JOB_PARTITION"}));
    EXPECT_EQ(n.job_id, "12");
    EXPECT_EQ(n.name, "");
    EXPECT_EQ(n.user, "");
    EXPECT_FALSE(n.gpus);
    EXPECT_FALSE(n.cpus);
    EXPECT_FALSE(n.memory_bytes);
    EXPECT_EQ(parse_slurm_environ(environ_of({"SLURM_JOB_ID=12; rm -rf /"})).job_id, "");
    EXPECT_EQ(parse_slurm_environ(std::string("SLURM_JOB_ID=1\0", 15) + std::string(100000, 'x')).job_id, "1");
}

TEST(SlurmNames, FromScontrolsOneLineForm) {
    SlurmNames n = parse_scontrol_job(kScontrol, "node7");
    EXPECT_EQ(n.job_id, "4242");
    EXPECT_EQ(n.name, "train resnet");  // a name with a space stays whole
    EXPECT_EQ(n.user, "alice");
    EXPECT_EQ(n.account, "vision");
    EXPECT_EQ(n.partition, "gpu");
    EXPECT_EQ(n.cpus, 8u);
    EXPECT_EQ(n.memory_bytes, 64000ull << 20);
    ASSERT_TRUE(n.gpus);
    EXPECT_EQ(*n.gpus, (std::vector<unsigned>{1, 3}));
    EXPECT_EQ(n.time_limit_seconds, 86400.0);
    EXPECT_TRUE(n.start_time_unix);
    // A one-node job's only detail entry is this node's even when names differ (node7 vs node7.cluster).
    EXPECT_EQ(parse_scontrol_job(kScontrol, "other").cpus, 8u);
    // Account (null), no GRES: no GPUs allocated, known.
    SlurmNames cpu = parse_scontrol_job(
        "JobId=5 JobName=x UserId=root(0) Account=(null) Partition=debug TimeLimit=UNLIMITED "
        "StartTime=Unknown Nodes=n1 CPU_IDs=0 Mem=0 GRES=\n",
        "n1");
    EXPECT_EQ(cpu.account, "");
    EXPECT_FALSE(cpu.memory_bytes);  // Mem=0: no memory asked for
    EXPECT_FALSE(cpu.time_limit_seconds);
    EXPECT_FALSE(cpu.start_time_unix);
    ASSERT_TRUE(cpu.gpus);
    EXPECT_TRUE(cpu.gpus->empty());
    // Two node groups: this node's entry only.
    SlurmNames two = parse_scontrol_job(
        "JobId=6 JobName=ddp UserId=bob(1001) Nodes=n1 CPU_IDs=0-3 Mem=100 GRES=gpu:4(IDX:0-3) "
        "Nodes=n2 CPU_IDs=0-1 Mem=50 GRES=gpu:2(IDX:2-3)",
        "n2");
    EXPECT_EQ(two.cpus, 2u);
    EXPECT_EQ(*two.gpus, (std::vector<unsigned>{2, 3}));
    EXPECT_FALSE(parse_scontrol_job("JobId=6 Nodes=n1 CPU_IDs=0 Nodes=n2 CPU_IDs=1", "n3").cpus);
}

TEST(SlurmNames, ScontrolErrorsAndGarbageNameNothing) {
    EXPECT_EQ(parse_scontrol_job("slurm_load_jobs error: Invalid job id specified\n", "n").job_id, "");
    EXPECT_EQ(parse_scontrol_job("", "n").job_id, "");
    EXPECT_EQ(parse_scontrol_job("JobId=abc JobName=x", "n").job_id, "");
    EXPECT_EQ(parse_scontrol_job("JobId=1 GRES=gpu:2(IDX:0-", "n").job_id, "1");
    EXPECT_EQ(parse_scontrol_job(std::string(100000, '='), "n").job_id, "");
    std::string many = "JobId=1";
    for (int i = 0; i < 5000; ++i) many += " Nodes=n CPU_IDs=0";
    EXPECT_EQ(parse_scontrol_job(many, "n").job_id, "1");
}

TEST(SlurmNames, DurationsAndIndexLists) {
    EXPECT_EQ(parse_slurm_duration("30"), 1800.0);
    EXPECT_EQ(parse_slurm_duration("30:15"), 1815.0);
    EXPECT_EQ(parse_slurm_duration("02:00:00"), 7200.0);
    EXPECT_EQ(parse_slurm_duration("2-12"), 2 * 86400.0 + 12 * 3600.0);
    EXPECT_EQ(parse_slurm_duration("1-00:30"), 86400.0 + 1800.0);
    EXPECT_EQ(parse_slurm_duration("1-00:00:10"), 86410.0);
    for (const char* bad : {"UNLIMITED", "Partition_Limit", "", "1:2:3:4", "-1", "1-", "a:b", "1--2"})
        EXPECT_FALSE(parse_slurm_duration(bad)) << bad;
    EXPECT_EQ(*parse_slurm_index_list("0-1,3"), (std::vector<unsigned>{0, 1, 3}));
    EXPECT_EQ(*parse_slurm_index_list("3,1,1"), (std::vector<unsigned>{1, 3}));
    for (const char* bad : {"", "1-0", "0-5000", "a", "1,,2", "-1"}) EXPECT_FALSE(parse_slurm_index_list(bad)) << bad;
}
