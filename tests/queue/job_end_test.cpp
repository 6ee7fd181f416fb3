// How a queued job ended, from its supervisor's status and its run's findings: done, failed with
// the reason, cancelled; out of memory from CUDA's error, the kernel's OOM kill or its cgroup's.
#include <gtest/gtest.h>

#include <csignal>

#include "queue/job_end.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

ShimStatus ended(int exit_status, int signal = 0) {
    ShimStatus s;
    s.started = true;
    s.exit_status = exit_status;
    s.signal = signal;
    return s;
}

diagnose::Finding finding(const char* rule, const char* summary) {
    diagnose::Finding f;
    f.rule = rule;
    f.summary = summary;
    return f;
}

}  // namespace

TEST(JobEnd, DoneFailedAndCancelled) {
    EXPECT_EQ(job_end(ended(0), {}).state, store::JobState::done);
    const JobEnd failed = job_end(ended(3), {});
    EXPECT_EQ(failed.state, store::JobState::failed);
    EXPECT_EQ(failed.note, "exit status 3");
    EXPECT_FALSE(failed.oom);
    EXPECT_EQ(job_end(ended(143, SIGTERM), {}).note, "killed by SIGTERM");
    ShimStatus cancelled = ended(143, SIGTERM);
    cancelled.cancelled = true;
    cancelled.oom_kills = 2;  // a cancelled job is not retried for memory
    const JobEnd c = job_end(cancelled, {finding("cuda_oom", "CUDA out of memory")});
    EXPECT_EQ(c.state, store::JobState::cancelled);
    EXPECT_FALSE(c.oom);
    ShimStatus never = ended(0);
    never.started = false;
    never.error = "cannot enter /nope: No such file or directory";
    EXPECT_EQ(job_end(never, {}).note, never.error);
}

// oom_kill 1 in the job cgroup's memory.events: failed and out of memory, even with nothing
// watched and even when the command's own status was 0; the run's finding names it when there is one.
TEST(JobEnd, TheCgroupsOomKillsMakeItFailedAndOutOfMemory) {
    ShimStatus s = ended(137, SIGKILL);
    s.oom_kills = 1;
    const JobEnd unwatched = job_end(s, {});
    EXPECT_EQ(unwatched.state, store::JobState::failed);
    EXPECT_TRUE(unwatched.oom);
    EXPECT_EQ(unwatched.note,
              "killed by SIGKILL; out of memory: the kernel's OOM killer killed 1 process(es) of its cgroup");
    const JobEnd watched = job_end(s, {finding("host_oom_kill",
                                               "the job ran out of its --mem 64.0M: the kernel's OOM killer killed 1 "
                                               "process(es) of its cgroup")});
    EXPECT_TRUE(watched.oom);
    EXPECT_EQ(watched.note,
              "killed by SIGKILL; the job ran out of its --mem 64.0M: the kernel's OOM killer killed 1 process(es) "
              "of its cgroup");
    ShimStatus zero = ended(0);
    zero.oom_kills = 1;  // a worker killed, the main process exited 0 anyway
    EXPECT_EQ(job_end(zero, {}).state, store::JobState::failed);
    EXPECT_TRUE(job_end(ended(1), {finding("cuda_oom", "CUDA out of memory")}).oom);
    EXPECT_FALSE(job_end(ended(1), {finding("input_bound", "GPU0 waits")}).oom);
}
