#include "launch/worker_env.hpp"

#include <algorithm>

#include "hang/flight_recorder.hpp"
#include "hang/stack_shim.hpp"

namespace baton::launch {

unsigned omp_threads(unsigned cpus, int local_workers) {
    if (local_workers < 1) local_workers = 1;
    return std::max(1u, cpus / static_cast<unsigned>(local_workers));
}

std::vector<std::pair<std::string, std::string>> worker_environment(const LaunchTopology& t, int local_rank,
                                                                    int restart_count, const WorkerExtras& x,
                                                                    const EnvLookup& inherited) {
    std::vector<std::pair<std::string, std::string>> env;
    auto set = [&](const char* k, std::string v) { env.emplace_back(k, std::move(v)); };
    auto unless_set = [&](const char* k, std::string v) {
        if (!inherited(k)) set(k, std::move(v));
    };
    const std::string world = std::to_string(t.world_size());
    const std::string rank = std::to_string(t.global_rank(local_rank));
    // torchrun's, in the order its docs list them. One role ("default") spans the whole job.
    set("RANK", rank);
    set("LOCAL_RANK", std::to_string(local_rank));
    set("WORLD_SIZE", world);
    set("LOCAL_WORLD_SIZE", std::to_string(t.nproc_per_node));
    set("GROUP_RANK", std::to_string(t.node_rank));
    set("GROUP_WORLD_SIZE", std::to_string(t.nnodes));
    set("ROLE_RANK", rank);
    set("ROLE_NAME", "default");
    set("ROLE_WORLD_SIZE", world);
    set("MASTER_ADDR", t.master_addr);
    set("MASTER_PORT", std::to_string(t.master_port));
    set("TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count));
    set("TORCHELASTIC_MAX_RESTARTS", std::to_string(t.max_restarts));
    set("TORCHELASTIC_RUN_ID", t.run_id);
    // No store is hosted by baton: rank 0's init_process_group("env://") creates the TCPStore.
    set("TORCHELASTIC_USE_AGENT_STORE", "False");
    if (!x.error_file.empty()) set("TORCHELASTIC_ERROR_FILE", x.error_file);
    // NCCL errors end the process instead of hanging it (the name changed in PyTorch 2.2).
    unless_set("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
    unless_set("NCCL_ASYNC_ERROR_HANDLING", "1");
    unless_set("OMP_NUM_THREADS", std::to_string(omp_threads(x.cpus, t.nproc_per_node)));
    // Python's output is unbuffered (torchrun runs `python -u`): a rank's last lines reach its log
    // even when it is killed.
    set("PYTHONUNBUFFERED", "1");
    if (static_cast<std::size_t>(local_rank) < x.gpus.size()) {
        set("CUDA_VISIBLE_DEVICES", x.gpus[static_cast<std::size_t>(local_rank)]);
        unless_set("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    }
    if (x.seed) {
        set("BATON_SEED", *x.seed);
        set("PYTHONHASHSEED", *x.seed);
    }
    if (x.nccl_debug) {
        set("NCCL_DEBUG", "INFO");
        if (!x.nccl_debug->empty()) set("NCCL_DEBUG_SUBSYS", *x.nccl_debug);
        if (!x.nccl_debug_file.empty()) set("NCCL_DEBUG_FILE", x.nccl_debug_file);
    }
    if (!x.nccl_socket_ifname.empty()) unless_set("NCCL_SOCKET_IFNAME", x.nccl_socket_ifname);
    if (x.nccl_ib_disable) unless_set("NCCL_IB_DISABLE", *x.nccl_ib_disable);
    if (!x.events_socket.empty()) set("BATON_EVENTS", x.events_socket);
    if (!x.memory_dir.empty()) set("BATON_MEMORY_DIR", x.memory_dir);
    if (!x.owner.empty()) set("BATON_OWNER", x.owner);
    if (!x.stack_shim_dir.empty())
        for (auto& [k, v] : hang::shim_environment(x.stack_shim_dir, x.stacks_dir, inherited("PYTHONPATH")))
            env.emplace_back(std::move(k), std::move(v));
    if (!x.flight_recorder_dir.empty())
        for (auto& [k, v] : hang::flight_recorder_environment(x.flight_recorder_dir, inherited))
            env.emplace_back(std::move(k), std::move(v));
    return env;
}

}  // namespace baton::launch
