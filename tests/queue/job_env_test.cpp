// The environment a queued job gets, rule by rule.
#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>

#include "queue/gpu_memory_auto.hpp"
#include "queue/job_env.hpp"
#include "queue/job_watches.hpp"
#include "queue/queue_server.hpp"

using namespace baton::queue;

namespace {

std::string value(const std::vector<std::string>& env, const std::string& key) {
    for (const std::string& kv : env)
        if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
    return "<unset>";
}

}  // namespace

TEST(QueueJobEnv, GpuJobGetsItsGpusInNvidiaSmiOrder) {
    JobEnvInput in;
    in.submitted = {{"PATH", "/usr/bin"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}, {"CUDA_DEVICE_ORDER", "FASTEST_FIRST"}};
    in.gpu_job = true;
    in.gpus = {"1", "3"};
    in.cpus = 8;
    in.job_id = 17;
    in.events_path = "/var/lib/baton/jobs/17/attempt-0/events";
    in.memory_dir = "/var/lib/baton/jobs/17/attempt-0/memory";
    const std::vector<std::string> env = job_environment(in);
    EXPECT_EQ(value(env, "CUDA_VISIBLE_DEVICES"), "1,3");
    EXPECT_EQ(value(env, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
    EXPECT_EQ(value(env, "OMP_NUM_THREADS"), "8");
    EXPECT_EQ(value(env, "MKL_NUM_THREADS"), "8");
    EXPECT_EQ(value(env, "BATON_JOB_ID"), "17");
    EXPECT_EQ(value(env, "BATON_EVENTS"), in.events_path);
    EXPECT_EQ(value(env, "BATON_MEMORY_DIR"), in.memory_dir);
    EXPECT_EQ(value(env, "BATON_RETRY"), "<unset>");
    EXPECT_EQ(value(env, "BATON_OOM"), "<unset>");
    EXPECT_EQ(value(env, "PATH"), "/usr/bin");
    EXPECT_TRUE(std::is_sorted(env.begin(), env.end()));
}

TEST(QueueJobEnv, SubmitterThreadCountsWinAndQueueVariablesDoNot) {
    JobEnvInput in;
    in.submitted = {{"OMP_NUM_THREADS", "2"}, {"BATON_RETRY", "9"}, {"BATON_OOM", "1"}, {"BATON_JOB_ID", "1"}};
    in.cpus = 4;
    in.job_id = 5;
    in.attempt = 2;
    in.after_oom = true;
    const std::vector<std::string> env = job_environment(in);
    EXPECT_EQ(value(env, "OMP_NUM_THREADS"), "2");
    EXPECT_EQ(value(env, "MKL_NUM_THREADS"), "4");
    EXPECT_EQ(value(env, "BATON_RETRY"), "2");
    EXPECT_EQ(value(env, "BATON_OOM"), "1");
    EXPECT_EQ(value(env, "BATON_JOB_ID"), "5");
    // A job without GPUs sees none: the ones in its shell's CUDA_VISIBLE_DEVICES belong to other jobs.
    EXPECT_EQ(value(env, "CUDA_VISIBLE_DEVICES"), "");
    in.attempt = 0;
    in.after_oom = false;
    const std::vector<std::string> first = job_environment(in);
    EXPECT_EQ(value(first, "BATON_RETRY"), "<unset>");
    EXPECT_EQ(value(first, "BATON_OOM"), "<unset>");
    EXPECT_EQ(value(first, "BATON_ARRAY_INDEX"), "<unset>");
    // An array's element: its array and index, never the submitter's stale ones.
    in.submitted.push_back({"BATON_ARRAY_INDEX", "99"});
    in.submitted.push_back({"BATON_ARRAY_ID", "98"});
    EXPECT_EQ(value(job_environment(in), "BATON_ARRAY_INDEX"), "<unset>");
    EXPECT_EQ(value(job_environment(in), "BATON_ARRAY_ID"), "<unset>");
    // The agent's version reaches the job (the hook compares it with its own), never the client's.
    in.submitted.push_back({"BATON_VERSION", "0.0.1"});
    ::setenv("BATON_VERSION", "7.7.7", 1);
    EXPECT_EQ(value(job_environment(in), "BATON_VERSION"), "7.7.7");
    ::unsetenv("BATON_VERSION");
    EXPECT_EQ(value(job_environment(in), "BATON_VERSION"), "<unset>");
    in.array_id = 40;
    in.array_index = 0;
    EXPECT_EQ(value(job_environment(in), "BATON_ARRAY_INDEX"), "0");
    EXPECT_EQ(value(job_environment(in), "BATON_ARRAY_ID"), "40");
}

TEST(QueueJobEnv, TheStackHandlerAndTheFlightRecorderUnlessTheSubmitterSetThem) {
    JobEnvInput in;
    in.submitted = {{"PYTHONPATH", "/home/u/lib"},
                    {"BATON_STACKS_DIR", "/tmp/stale"},
                    {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/scratch/trace_"}};
    in.stack_shim_dir = "/j/1/attempt-0/python";
    in.stacks_dir = "/j/1/attempt-0/stacks";
    in.flight_recorder_dir = "/j/1/attempt-0/stacks/fr";
    const std::vector<std::string> env = job_environment(in);
    EXPECT_EQ(value(env, "PYTHONPATH"), "/j/1/attempt-0/python:/home/u/lib");
    EXPECT_EQ(value(env, "BATON_STACKS_DIR"), "/j/1/attempt-0/stacks") << "not a stale one of the submitter's shell";
    EXPECT_NE(value(env, "BATON_STACKS_SIGNAL"), "<unset>");
    EXPECT_EQ(value(env, "TORCH_NCCL_TRACE_BUFFER_SIZE"), "2000");
    EXPECT_EQ(value(env, "TORCH_FR_DEBUG_INFO_PIPE_FILE"), "/j/1/attempt-0/stacks/fr/pipe_");
    EXPECT_EQ(value(env, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"), "/scratch/trace_") << "the submitter's own";
    EXPECT_EQ(value(env, "TORCH_FR_DUMP_TEMP_FILE"), "<unset>");
    EXPECT_TRUE(std::is_sorted(env.begin(), env.end()));
    // ... and the queue does not read dumps where the job points: that job is judged by its stacks.
    const baton::hang::FlightRecorderPaths p = queue_flight_recorder_paths(in.flight_recorder_dir, env);
    EXPECT_FALSE(p.enabled);
    EXPECT_NE(p.off_reason.find("reads only those it placed"), std::string::npos);
    in.submitted.pop_back();
    EXPECT_TRUE(queue_flight_recorder_paths(in.flight_recorder_dir, job_environment(in)).enabled);
    // Without a handler (it could not be made), none of it.
    JobEnvInput bare;
    const std::vector<std::string> none = job_environment(bare);
    EXPECT_EQ(value(none, "BATON_STACKS_DIR"), "<unset>");
    EXPECT_EQ(value(none, "TORCH_NCCL_TRACE_BUFFER_SIZE"), "<unset>");
}

TEST(QueueJobEnv, DefaultCpusAreTheGpusShareOfTheMachine) {
    Pool p;
    for (unsigned c = 0; c < 64; ++c) p.cpus.push_back(c);
    p.gpus.resize(8);
    Resources w;
    EXPECT_EQ(default_cpus(w, p), 1u);  // no GPUs: one CPU
    w.gpus = 1;
    EXPECT_EQ(default_cpus(w, p), 8u);
    w.gpus = 3;
    EXPECT_EQ(default_cpus(w, p), 24u);
    w.gpus = 0;
    w.gpu_uuids = {"GPU-a", "GPU-b"};
    EXPECT_EQ(default_cpus(w, p), 16u);
    p.cpus = {0, 1, 2};  // fewer CPUs than GPUs: at least one each, never more than there are
    EXPECT_EQ(default_cpus(w, p), 2u);
    w.gpu_uuids.clear();
    w.gpus = 8;
    EXPECT_EQ(default_cpus(w, p), 3u);
}

TEST(QueueGpuMemoryAuto, PeakPlusTenPercentInQuarterGibSteps) {
    constexpr std::uint64_t MiB = 1ull << 20;
    EXPECT_EQ(with_margin(0), 256 * MiB);
    EXPECT_EQ(with_margin(512 * MiB), 768 * MiB);          // 563 MiB -> 768
    EXPECT_EQ(with_margin(20 * 1024 * MiB), 22784 * MiB);  // 22528 MiB -> 22784 (89 steps)
    EXPECT_EQ(with_margin(232 * MiB), 256 * MiB);          // 255.2 MiB -> 256
    EXPECT_EQ(with_margin(233 * MiB), 512 * MiB);          // 256.3 MiB -> 512
}
