// Per-job cgroups on a cgroupfs made of plain files in a temporary directory (this CI machine's
// kernel keeps memory and cpuset on cgroup v1, so no real delegated v2 subtree exists here; the
// files written are what the kernel reads): when a subtree counts as delegated, what preparing it
// moves and enables, the limits each job's cgroup gets, and the clean-up.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/xattr.h>
#include <unistd.h>

#include "queue/job_cgroup.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

// A /proc whose self/ says the process is in cgroup `own` of a cgroup2 mounted at `mount`.
std::string fake_proc(const test::TempDir& d, const std::string& mount, const std::string& cgroup_lines) {
    const std::string proc = d.path() + "/proc";
    std::filesystem::create_directories(proc + "/self");
    std::ofstream(proc + "/self/mountinfo")
        << "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
        << (mount.empty() ? "" : "40 30 0:37 / " + mount + " rw,relatime - cgroup2 cgroup2 rw\n");
    std::ofstream(proc + "/self/cgroup") << cgroup_lines;
    return proc;
}

std::string read(const std::string& path) {
    return test::read_text(path);
}

void touch(const std::string& path) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream{path};
}

}  // namespace

TEST(JobCgroup, CpuLists) {
    EXPECT_EQ(cpu_list({}), "");
    EXPECT_EQ(cpu_list({3}), "3");
    EXPECT_EQ(cpu_list({0, 1, 2, 3}), "0-3");
    EXPECT_EQ(cpu_list({0, 2, 3, 5, 7, 8}), "0,2-3,5,7-8");
}

TEST(JobCgroup, WhatIsNotADelegatedSubtreeSaysWhy) {
    test::TempDir d;
    const std::string mount = d.path() + "/cg";
    std::filesystem::create_directories(mount + "/system.slice/baton-queue.service");
    auto why = [&](const std::string& m, const std::string& lines) {
        Result<CgroupPlace> p = find_delegated_cgroup(fake_proc(d, m, lines));
        return p.ok() ? std::string("ok") : p.error().message;
    };
    EXPECT_EQ(why("", "0::/system.slice/baton-queue.service\n"), "no cgroup v2 hierarchy is mounted");
    EXPECT_EQ(why(mount, "4:memory:/x\n1:cpu:/\n"), "this process has no cgroup v2 (the machine runs cgroup v1)");
    EXPECT_EQ(why(mount, "0::/\n"), "the agent runs in the root cgroup, not in one delegated to it");
    if (geteuid() == 0) {  // (root may write anywhere: only systemd's mark counts)
        EXPECT_NE(why(mount, "0::/system.slice/baton-queue.service\n").find("was not delegated to it"),
                  std::string::npos);
    }
}

TEST(JobCgroup, ADelegatedSubtreeIsPreparedAndEachJobGetsItsLimits) {
    test::TempDir d;
    const std::string mount = d.path() + "/cg";
    const std::string dir = mount + "/system.slice/baton-queue.service";
    std::filesystem::create_directories(dir);
    if (geteuid() != 0 || setxattr(dir.c_str(), "trusted.delegate", "1", 1, 0) != 0)
        GTEST_SKIP() << "needs root and a filesystem with trusted extended attributes for systemd's mark";
    std::ofstream(dir + "/cgroup.controllers") << "cpuset cpu io memory pids\n";
    std::ofstream(dir + "/cgroup.procs") << "123\n456\n";
    for (const char* f :
         {"/cgroup.subtree_control", "/agent/cgroup.procs", "/jobs/cgroup.subtree_control", "/jobs/7-0/memory.max",
          "/jobs/7-0/memory.oom.group", "/jobs/7-0/cpuset.cpus", "/jobs/7-0/cgroup.kill", "/jobs/8-1/memory.max",
          "/jobs/8-1/memory.oom.group", "/jobs/8-1/cpuset.cpus"})
        touch(dir + f);

    // Found from the agent's own cgroup, also when a previous agent already moved into D/agent.
    for (const char* own : {"0::/system.slice/baton-queue.service\n", "0::/system.slice/baton-queue.service/agent\n"}) {
        Result<CgroupPlace> p = find_delegated_cgroup(fake_proc(d, mount, own));
        ASSERT_TRUE(p.ok()) << p.error().message;
        EXPECT_EQ(p->dir, dir);
        EXPECT_EQ(p->controllers, (std::vector<std::string>{"cpuset", "memory"}));
    }
    const CgroupPlace place = *find_delegated_cgroup(fake_proc(d, mount, "0::/system.slice/baton-queue.service\n"));
    ASSERT_TRUE(prepare_job_cgroups(place).ok());
    EXPECT_EQ(read(dir + "/agent/cgroup.procs"), "456");  // (each pid written in turn; the last one stays)
    EXPECT_EQ(read(dir + "/cgroup.subtree_control"), "+cpuset +memory");
    EXPECT_EQ(read(dir + "/jobs/cgroup.subtree_control"), "+cpuset +memory");

    Result<std::string> job = create_job_cgroup(place, "7-0", 1ull << 30, {0, 1});
    ASSERT_TRUE(job.ok()) << job.error().message;
    EXPECT_EQ(*job, dir + "/jobs/7-0");
    EXPECT_EQ(read(*job + "/memory.max"), "1073741824");
    EXPECT_EQ(read(*job + "/memory.oom.group"), "1");
    EXPECT_EQ(read(*job + "/cpuset.cpus"), "0-1");
    Result<std::string> unlimited = create_job_cgroup(place, "8-1", 0, {});
    ASSERT_TRUE(unlimited.ok());
    EXPECT_EQ(read(*unlimited + "/memory.max"), "max");
    EXPECT_EQ(read(*unlimited + "/cpuset.cpus"), "");  // (all of the agent's)

    // Not empty yet (here: plain files; in the kernel: processes still leaving): killed, kept for later.
    EXPECT_FALSE(remove_job_cgroup(*job));
    EXPECT_EQ(read(*job + "/cgroup.kill"), "1");
    EXPECT_TRUE(remove_job_cgroup(dir + "/jobs/gone"));
    // A cgroup the kernel refuses to make: the job runs without one, and the error names it.
    Result<std::string> refused = create_job_cgroup(place, "no/such/parent", 0, {});
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("cannot create"), std::string::npos);

    // The queue's keeper over them: attempt 1 of job 8 is 8-1; one that cannot be removed yet is
    // swept again until it can.
    JobCgroups cgroups = JobCgroups::open(true, fake_proc(d, mount, "0::/system.slice/baton-queue.service\n"));
    ASSERT_TRUE(cgroups.active()) << cgroups.status();
    EXPECT_EQ(cgroups.status(), "a cgroup per job under " + dir + "/jobs (cpuset, memory)");
    Result<std::string> eight = cgroups.create(8, 1, 2ull << 30, {3});
    ASSERT_TRUE(eight.ok());
    EXPECT_EQ(*eight, dir + "/jobs/8-1");
    EXPECT_EQ(read(*eight + "/memory.max"), "2147483648");
    EXPECT_EQ(read(*eight + "/cpuset.cpus"), "3");
    cgroups.drop(8, 1);
    EXPECT_EQ(cgroups.emptying(), 1u);
    cgroups.sweep();
    EXPECT_EQ(cgroups.emptying(), 1u);
    std::filesystem::remove_all(*eight);
    cgroups.sweep();
    EXPECT_EQ(cgroups.emptying(), 0u);
}

TEST(JobCgroup, WithoutASubtreeTheJobsGetAffinityOnlyAndSayWhy) {
    test::TempDir d;
    JobCgroups off = JobCgroups::open(false);
    EXPECT_FALSE(off.active());
    EXPECT_EQ(off.status(), "CPU affinity only: job cgroups are off");
    Result<std::string> none = off.create(3, 0, 1ull << 30, {0});
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(*none, "");  // (the supervisor's spec: no cgroup)
    off.drop(3, 0);
    EXPECT_EQ(off.emptying(), 0u);

    JobCgroups v1 = JobCgroups::open(true, fake_proc(d, "", "4:memory:/x\n"));
    EXPECT_FALSE(v1.active());
    EXPECT_EQ(v1.status(), "CPU affinity only: no cgroup v2 hierarchy is mounted");
}
