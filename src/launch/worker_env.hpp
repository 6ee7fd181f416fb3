// The environment of each worker `baton launch` starts: torchrun's variables key for key (so a
// script written for torchrun runs unchanged), and what baton adds (a bound GPU, the seed, NCCL's
// debug switches, the hook's socket). Pure: the inherited environment is asked through a lookup.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace baton::launch {

// Where the local workers sit in the whole job (static rendezvous, as torchrun's `env://`).
struct LaunchTopology {
    int nnodes = 1;
    int node_rank = 0;
    int nproc_per_node = 1;
    std::string master_addr = "127.0.0.1";
    int master_port = 29500;
    std::string run_id;
    int max_restarts = 0;

    int world_size() const { return nnodes * nproc_per_node; }
    int global_rank(int local_rank) const { return node_rank * nproc_per_node + local_rank; }
};

// What baton adds to torchrun's variables.
struct WorkerExtras {
    // --bind-gpus: the CUDA_VISIBLE_DEVICES entry of local rank i; empty: GPUs not bound.
    std::vector<std::string> gpus;
    std::optional<std::string> seed;             // --seed: BATON_SEED and PYTHONHASHSEED
    std::optional<std::string> nccl_debug;       // --nccl-debug: NCCL_DEBUG_SUBSYS ("" leaves NCCL's default)
    std::string nccl_debug_file;                 // NCCL_DEBUG_FILE (NCCL expands %h and %p)
    std::string nccl_socket_ifname;              // --nccl socket|ib: NCCL_SOCKET_IFNAME unless set
    std::optional<std::string> nccl_ib_disable;  // --nccl socket: "1", ib: "0" (NCCL_IB_DISABLE unless set)
    std::string error_file;                      // TORCHELASTIC_ERROR_FILE (torch's @record writes it)
    unsigned cpus = 1;                           // the CPUs the launcher may use (for OMP_NUM_THREADS)
    std::string events_socket;                   // BATON_EVENTS: the Python hook's socket
    std::string memory_dir;                      // BATON_MEMORY_DIR: where the hook writes an OOM's capture
    std::string owner;                           // BATON_OWNER: "PID:START_TICKS" of the launcher (baton clean)
    // The stack handler (hang/stack_shim.hpp): its directory, put first on PYTHONPATH, and where the
    // ranks' stacks go; empty: none.
    std::string stack_shim_dir, stacks_dir;
    // Where the ranks' Flight Recorder dumps and pipes go (hang/flight_recorder.hpp); empty: its
    // variables are not set.
    std::string flight_recorder_dir;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The variables to set for local rank `local_rank` in attempt `restart_count` (0 first), on top of
// the inherited environment (which `inherited` answers for: the "unless set" rules).
std::vector<std::pair<std::string, std::string>> worker_environment(const LaunchTopology& t, int local_rank,
                                                                    int restart_count, const WorkerExtras& x,
                                                                    const EnvLookup& inherited);

// OMP_NUM_THREADS when the user did not set it: the CPUs shared by the local workers, at least 1
// (torchrun sets 1 and warns; a rank of a CPU job then computes on one core).
unsigned omp_threads(unsigned cpus, int local_workers);

}  // namespace baton::launch
