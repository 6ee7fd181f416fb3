// A Slurm job's cgroup totals, as cgroup v1 and v2 write them: fake trees in the layout slurmd
// makes (the real v1 one is read in tests/cli/slurm_integration_test.cpp), limits that mean "none",
// files missing or garbled, and paths that would lead out of the tree.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "sample/linux/job_cgroup_usage.hpp"
#include "test_support.hpp"

using namespace baton;
using os::JobCgroupUsage;
using os::read_job_cgroup_usage;
using os::slurm_job_cgroup_dir;

TEST(JobCgroupUsage, TheJobsDirectoryIsCutFromAProcesssPath) {
    EXPECT_EQ(slurm_job_cgroup_dir("/slurm/uid_1000/job_12/step_0/task_1", "12"), "/slurm/uid_1000/job_12");
    EXPECT_EQ(slurm_job_cgroup_dir("/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0", "77"),
              "/system.slice/slurmstepd.scope/job_77");
    EXPECT_EQ(slurm_job_cgroup_dir("/slurm_node3/uid_0/job_5", "5"), "/slurm_node3/uid_0/job_5");
    // Another job's path, a longer id, a prefix of the id: not this job.
    EXPECT_EQ(slurm_job_cgroup_dir("/slurm/uid_0/job_123/step_0", "12"), "");
    EXPECT_EQ(slurm_job_cgroup_dir("/slurm/uid_0/job_1/step_0", "12"), "");
    // Hostile: relative, dot components (a planted /proc), empty components, an empty id.
    EXPECT_EQ(slurm_job_cgroup_dir("slurm/uid_0/job_12", "12"), "");
    EXPECT_EQ(slurm_job_cgroup_dir("/../../etc/job_12", "12"), "");
    EXPECT_EQ(slurm_job_cgroup_dir("/slurm/./job_12", "12"), "");
    EXPECT_EQ(slurm_job_cgroup_dir("/slurm//job_12", "12"), "");
    EXPECT_EQ(slurm_job_cgroup_dir("/slurm/uid_0/job_", ""), "");
    EXPECT_EQ(slurm_job_cgroup_dir("", "12"), "");
}

TEST(JobCgroupUsage, StatLinesAndLimits) {
    const std::string stat = "anon 4096\nfile 8192\nanon_thp 0\nshmem 12\n";
    EXPECT_EQ(os::stat_value(stat, "anon"), 4096u);
    EXPECT_EQ(os::stat_value(stat, "file"), 8192u);
    EXPECT_EQ(os::stat_value(stat, "shmem"), 12u);
    EXPECT_EQ(os::stat_value(stat, "anon_"), std::nullopt);
    EXPECT_EQ(os::stat_value("anon -3\n", "anon"), std::nullopt);
    EXPECT_EQ(os::stat_value("anon 99999999999999999999999\n", "anon"), std::nullopt);
    EXPECT_EQ(os::stat_value("", "anon"), std::nullopt);
    EXPECT_EQ(os::memory_limit("4294967296\n"), 4294967296u);
    EXPECT_EQ(os::memory_limit("max\n"), std::nullopt);
    EXPECT_EQ(os::memory_limit("9223372036854771712\n"), std::nullopt);  // v1's "unlimited"
    EXPECT_EQ(os::memory_limit("12abc"), std::nullopt);
}

TEST(JobCgroupUsage, CgroupV2) {
    test::TempDir d;
    const std::string job = "/system.slice/slurmstepd.scope/job_77";
    d.write("cgroup.controllers", "cpuset cpu io memory pids\n");
    d.write(job.substr(1) + "/cpu.stat", "usage_usec 7500000\nuser_usec 6000000\nsystem_usec 1500000\nnr_periods 0\n");
    d.write(job.substr(1) + "/memory.current", "3221225472\n");
    d.write(job.substr(1) + "/memory.max", "8589934592\n");
    d.write(job.substr(1) + "/memory.stat",
            "anon 2147483648\nfile 1073741824\nkernel 1000\nshmem 4096\nswapcached 8192\n");
    d.write(job.substr(1) + "/memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
    d.write(job.substr(1) + "/cpuset.cpus.effective", "0-3,8\n");
    const JobCgroupUsage u = read_job_cgroup_usage(d.path(), job);
    EXPECT_DOUBLE_EQ(u.cpu_seconds.value_or(-1), 7.5);
    EXPECT_DOUBLE_EQ(u.cpu_user_seconds.value_or(-1), 6.0);
    EXPECT_DOUBLE_EQ(u.cpu_system_seconds.value_or(-1), 1.5);
    EXPECT_EQ(u.memory_used_bytes, 3221225472u);
    EXPECT_EQ(u.memory_limit_bytes, 8589934592u);
    EXPECT_EQ(u.memory_rss_bytes, 2147483648u + 8192u);
    EXPECT_EQ(u.memory_cache_bytes, 1073741824u);
    EXPECT_EQ(u.memory_shmem_bytes, 4096u);
    EXPECT_EQ(u.memory_fail_count, 3u);
    EXPECT_EQ(u.cpus, 5u);
    // No limit, no cpuset controller, cpu.stat garbled: absent, not zero.
    d.write(job.substr(1) + "/memory.max", "max\n");
    d.remove(job.substr(1) + "/cpuset.cpus.effective");
    d.write(job.substr(1) + "/cpu.stat", "usage_usec lots\n");
    const JobCgroupUsage bare = read_job_cgroup_usage(d.path(), job);
    EXPECT_FALSE(bare.memory_limit_bytes);
    EXPECT_FALSE(bare.cpus);
    EXPECT_FALSE(bare.cpu_seconds);
    EXPECT_EQ(bare.memory_used_bytes, 3221225472u);
}

TEST(JobCgroupUsage, CgroupV1WithCpuAndCpuacctMountedTogether) {
    test::TempDir d;
    const std::string job = "/slurm/uid_1000/job_4242";
    d.write("cpu,cpuacct" + job + "/cpuacct.usage", "12500000000\n");
    d.write("cpu,cpuacct" + job + "/cpuacct.stat", "user 1000\nsystem 250\n");
    d.write("memory" + job + "/memory.usage_in_bytes", "1073741824\n");
    d.write("memory" + job + "/memory.limit_in_bytes", "9223372036854771712\n");
    d.write("memory" + job + "/memory.stat",
            "cache 1\nrss 2\nshmem 3\ntotal_cache 536870912\ntotal_rss 268435456\ntotal_shmem 65536\n");
    d.write("memory" + job + "/memory.failcnt", "0\n");
    d.write("cpuset" + job + "/cpuset.cpus", "2,4-5\n");
    const JobCgroupUsage u = read_job_cgroup_usage(d.path(), job);
    EXPECT_DOUBLE_EQ(u.cpu_seconds.value_or(-1), 12.5);
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    EXPECT_DOUBLE_EQ(u.cpu_user_seconds.value_or(-1), 1000 / hz);
    EXPECT_DOUBLE_EQ(u.cpu_system_seconds.value_or(-1), 250 / hz);
    EXPECT_EQ(u.memory_used_bytes, 1073741824u);
    EXPECT_FALSE(u.memory_limit_bytes);  // unlimited
    EXPECT_EQ(u.memory_rss_bytes, 268435456u);
    EXPECT_EQ(u.memory_cache_bytes, 536870912u);
    EXPECT_EQ(u.memory_shmem_bytes, 65536u);
    EXPECT_EQ(u.memory_fail_count, 0u);
    EXPECT_EQ(u.cpus, 3u);
    // A job whose directories are gone (it ended between the sample and the scrape): nothing.
    const JobCgroupUsage gone = read_job_cgroup_usage(d.path(), "/slurm/uid_1000/job_4243");
    EXPECT_FALSE(gone.cpu_seconds || gone.memory_used_bytes || gone.cpus || gone.memory_rss_bytes);
}

TEST(JobCgroupUsage, HostileFilesAreAbsentValues) {
    test::TempDir d;
    const std::string job = "/slurm/uid_0/job_9";
    d.write("cpuacct" + job + "/cpuacct.usage", std::string(100000, '9'));  // past the size bound
    d.write("memory" + job + "/memory.usage_in_bytes", "-1\n");
    d.write("memory" + job + "/memory.stat", std::string("total_rss \0\n", 12) + "total_cache 1 2\n");
    d.write("cpuset" + job + "/cpuset.cpus", "9-3,x,\n");
    const JobCgroupUsage u = read_job_cgroup_usage(d.path(), job);
    EXPECT_FALSE(u.cpu_seconds);
    EXPECT_FALSE(u.memory_used_bytes);
    EXPECT_FALSE(u.memory_rss_bytes);
    EXPECT_FALSE(u.memory_cache_bytes);
    EXPECT_FALSE(u.cpus);
    // A FIFO where a file should be never blocks the read.
    const std::string fifo = d.path() + "/memory" + job + "/memory.failcnt";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_FALSE(read_job_cgroup_usage(d.path(), job).memory_fail_count);
}
