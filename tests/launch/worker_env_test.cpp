// The workers' environment: torchrun's variables key for key, the "unless set" rules, and what
// baton adds (a bound GPU, the seed, NCCL's debug switches).
#include <gtest/gtest.h>

#include <map>

#include "launch/worker_env.hpp"

using namespace baton;
using namespace baton::launch;

namespace {

std::map<std::string, std::string> env_of(const LaunchTopology& t, int local_rank, int restart, const WorkerExtras& x,
                                          const std::map<std::string, std::string>& inherited = {}) {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : worker_environment(t, local_rank, restart, x, [&](const std::string& k) {
             auto it = inherited.find(k);
             return it == inherited.end() ? std::nullopt : std::optional<std::string>(it->second);
         }))
        EXPECT_TRUE(out.emplace(k, v).second) << k << " set twice";
    return out;
}

}  // namespace

TEST(WorkerEnv, TorchrunsVariablesForTheSecondNode) {
    LaunchTopology t;
    t.nnodes = 2;
    t.node_rank = 1;
    t.nproc_per_node = 4;
    t.master_addr = "10.0.0.1";
    t.master_port = 29501;
    t.run_id = "r1";
    t.max_restarts = 3;
    WorkerExtras x;
    x.cpus = 32;
    x.error_file = "/logs/r1/attempt_2/1/error.json";
    const auto e = env_of(t, 1, 2, x);
    const std::map<std::string, std::string> want = {
        {"RANK", "5"},
        {"LOCAL_RANK", "1"},
        {"WORLD_SIZE", "8"},
        {"LOCAL_WORLD_SIZE", "4"},
        {"GROUP_RANK", "1"},
        {"GROUP_WORLD_SIZE", "2"},
        {"ROLE_RANK", "5"},
        {"ROLE_NAME", "default"},
        {"ROLE_WORLD_SIZE", "8"},
        {"MASTER_ADDR", "10.0.0.1"},
        {"MASTER_PORT", "29501"},
        {"TORCHELASTIC_RESTART_COUNT", "2"},
        {"TORCHELASTIC_MAX_RESTARTS", "3"},
        {"TORCHELASTIC_RUN_ID", "r1"},
        {"TORCHELASTIC_USE_AGENT_STORE", "False"},
        {"TORCHELASTIC_ERROR_FILE", "/logs/r1/attempt_2/1/error.json"},
        {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
        {"NCCL_ASYNC_ERROR_HANDLING", "1"},
        {"OMP_NUM_THREADS", "8"},  // 32 CPUs over 4 local ranks
        {"PYTHONUNBUFFERED", "1"},
    };
    EXPECT_EQ(e, want);
}

TEST(WorkerEnv, WhatTheUserSetStays) {
    LaunchTopology t;
    t.nproc_per_node = 2;
    WorkerExtras x;
    x.cpus = 16;
    x.gpus = {"2", "3"};
    const auto e = env_of(t, 1, 0, x,
                          {{"OMP_NUM_THREADS", "3"},
                           {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"},
                           {"NCCL_ASYNC_ERROR_HANDLING", "0"},
                           {"CUDA_DEVICE_ORDER", "FASTEST_FIRST"}});
    EXPECT_EQ(e.count("OMP_NUM_THREADS"), 0u);
    EXPECT_EQ(e.count("TORCH_NCCL_ASYNC_ERROR_HANDLING"), 0u);
    EXPECT_EQ(e.count("NCCL_ASYNC_ERROR_HANDLING"), 0u);
    EXPECT_EQ(e.count("CUDA_DEVICE_ORDER"), 0u);
    EXPECT_EQ(e.at("CUDA_VISIBLE_DEVICES"), "3");  // local rank 1's own GPU, replacing the inherited list
}

TEST(WorkerEnv, BoundGpusSeedNcclDebugHookAndOwner) {
    LaunchTopology t;
    t.nproc_per_node = 2;
    WorkerExtras x;
    x.gpus = {"GPU-aaaa", "GPU-bbbb"};
    x.seed = "1234";
    x.nccl_debug = "INIT,NET";
    x.nccl_debug_file = "/logs/r/attempt_0/0/nccl.%h.%p.log";
    x.events_socket = "/run/user/1/baton/ev.sock";
    x.memory_dir = "/run/user/1/baton/memory";
    x.owner = "4242:99";
    const auto e = env_of(t, 0, 0, x);
    EXPECT_EQ(e.at("CUDA_VISIBLE_DEVICES"), "GPU-aaaa");
    EXPECT_EQ(e.at("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
    EXPECT_EQ(e.at("BATON_SEED"), "1234");
    EXPECT_EQ(e.at("PYTHONHASHSEED"), "1234");
    EXPECT_EQ(e.at("NCCL_DEBUG"), "INFO");
    EXPECT_EQ(e.at("NCCL_DEBUG_SUBSYS"), "INIT,NET");
    EXPECT_EQ(e.at("NCCL_DEBUG_FILE"), "/logs/r/attempt_0/0/nccl.%h.%p.log");
    EXPECT_EQ(e.at("BATON_EVENTS"), "/run/user/1/baton/ev.sock");
    EXPECT_EQ(e.at("BATON_MEMORY_DIR"), "/run/user/1/baton/memory");
    EXPECT_EQ(e.at("BATON_OWNER"), "4242:99");
    // --nccl-debug without subsystems leaves NCCL's default.
    x.nccl_debug = "";
    EXPECT_EQ(env_of(t, 0, 0, x).count("NCCL_DEBUG_SUBSYS"), 0u);
    // Not asked: none of it.
    const auto plain = env_of(t, 0, 0, WorkerExtras{});
    for (const char* k :
         {"CUDA_VISIBLE_DEVICES", "BATON_SEED", "PYTHONHASHSEED", "NCCL_DEBUG", "BATON_EVENTS", "BATON_MEMORY_DIR"})
        EXPECT_EQ(plain.count(k), 0u) << k;
}

TEST(WorkerEnv, OmpThreadsShareTheCpusAndNeverDropToZero) {
    EXPECT_EQ(omp_threads(8, 4), 2u);
    EXPECT_EQ(omp_threads(2, 4), 1u);
    EXPECT_EQ(omp_threads(0, 1), 1u);
    EXPECT_EQ(omp_threads(7, 0), 7u);
}

TEST(WorkerEnv, NcclPresetsKeepWhatTheUserSet) {
    LaunchTopology t;
    WorkerExtras x;
    x.nccl_socket_ifname = "ib0";
    x.nccl_ib_disable = "1";
    auto e = env_of(t, 0, 0, x);
    EXPECT_EQ(e.at("NCCL_SOCKET_IFNAME"), "ib0");
    EXPECT_EQ(e.at("NCCL_IB_DISABLE"), "1");
    std::vector<std::pair<std::string, std::string>> mine =
        worker_environment(t, 0, 0, x, test::env_lookup({{"NCCL_SOCKET_IFNAME", "eth1"}, {"NCCL_IB_DISABLE", "0"}}));
    for (const auto& [k, v] : mine) {
        EXPECT_NE(k, "NCCL_SOCKET_IFNAME") << "the user's own stays (inherited)";
        EXPECT_NE(k, "NCCL_IB_DISABLE");
    }
    EXPECT_EQ(env_of(t, 0, 0, WorkerExtras{}).count("NCCL_SOCKET_IFNAME"), 0u);
}
