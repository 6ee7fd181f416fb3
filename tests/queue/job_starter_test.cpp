// The parts of a job's start that decide: its owner from passwd, CUDA_VISIBLE_DEVICES' names,
// the owner's login variables over the submitter's, and directories that stay the agent's.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "queue/job_starter.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::queue;

TEST(JobStarter, OwnerFromPasswd) {
    Result<JobOwner> me = job_owner(static_cast<std::uint32_t>(geteuid()));
    ASSERT_TRUE(me.ok()) << me.error().message;
    EXPECT_EQ(me->uid, geteuid());
    EXPECT_FALSE(me->name.empty());
    Result<JobOwner> nobody = job_owner(4000000000u);
    ASSERT_FALSE(nobody.ok());
    EXPECT_TRUE(nobody.error().is(ErrorCode::not_found));
    EXPECT_EQ(nobody.error().message, "no user with uid 4000000000 on this machine");
}

TEST(JobStarter, VisibleDevicesByIndexOrUuid) {
    std::vector<PoolGpu> gpus(3);
    for (unsigned i = 0; i < 3; ++i) {
        gpus[i].index = i;
        gpus[i].uuid = "GPU-" + std::to_string(i);
    }
    EXPECT_EQ(visible_devices({"GPU-2", "GPU-0"}, gpus, false), (std::vector<std::string>{"2", "0"}));
    EXPECT_EQ(visible_devices({"GPU-2", "GPU-0"}, gpus, true), (std::vector<std::string>{"GPU-2", "GPU-0"}));
    // A GPU NVML gave no UUID is held by index.
    EXPECT_EQ(visible_devices({"index:1"}, gpus, true), (std::vector<std::string>{"1"}));
}

TEST(JobStarter, TheOwnersLoginVariables) {
    JobOwner o;
    o.name = "ana";
    o.home = "/home/ana";
    o.shell = "/bin/zsh";
    std::vector<std::string> env = {"PATH=/usr/bin", "HOME=/root", "USER=root", "HOMEWARD=x"};
    set_login_variables(env, o);
    EXPECT_EQ(env, (std::vector<std::string>{"PATH=/usr/bin", "HOME=/home/ana", "USER=ana", "HOMEWARD=x", "LOGNAME=ana",
                                             "SHELL=/bin/zsh"}));
    o.shell.clear();  // no shell in passwd: the submitter's stays
    std::vector<std::string> keep = {"SHELL=/bin/bash"};
    set_login_variables(keep, o);
    EXPECT_EQ(keep.front(), "SHELL=/bin/bash");
}

TEST(JobStarter, DirectoriesStayTheAgents) {
    test::TempDir d;
    const std::string job = d.path() + "/jobs/7", attempt = job + "/attempt-0";
    ASSERT_TRUE(make_attempt_dirs(job, attempt).ok());
    struct stat st {};
    ASSERT_EQ(::stat(attempt.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, geteuid() == 0 ? 0711u : 0700u);
    ASSERT_EQ(::stat(job.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, geteuid() == 0 ? 0711u : 0700u);
    d.write("file", "x");
    EXPECT_FALSE(make_attempt_dirs(d.path() + "/file", d.path() + "/file/attempt-0").ok());
}

TEST(JobStarter, AForeignComputeProcessOnTheJobsGpuSendsItBack) {
    std::vector<GpuInfo> gpus(2);
    for (unsigned i = 0; i < 2; ++i) {
        gpus[i].index = i;
        gpus[i].uuid = "GPU-" + std::to_string(i);
    }
    GpuProcess ours;
    ours.pid = 100;
    GpuProcess in_container;  // (NVML's pid is the host's; the queue knows it by this namespace's)
    in_container.pid = 90100;
    in_container.local_pid = 101;
    GpuProcess display;
    display.pid = 7;
    display.type = GpuProcessType::graphics;
    gpus[1].processes = {ours, in_container, display};
    const std::set<std::uint32_t> queue_pids{100, 101};
    EXPECT_EQ(foreign_gpu_process({"GPU-1"}, gpus, queue_pids), std::nullopt);
    GpuProcess stranger;
    stranger.pid = 4242;
    gpus[1].processes.push_back(stranger);
    EXPECT_EQ(foreign_gpu_process({"GPU-1"}, gpus, queue_pids),
              "GPU1 got a process the queue did not start (pid 4242) just before the start");
    EXPECT_EQ(foreign_gpu_process({"index:1"}, gpus, queue_pids).has_value(), true);  // (a GPU without a UUID)
    EXPECT_EQ(foreign_gpu_process({"GPU-0"}, gpus, queue_pids), std::nullopt);        // (not the job's GPU)
    EXPECT_EQ(foreign_gpu_process({}, gpus, queue_pids), std::nullopt);
}
