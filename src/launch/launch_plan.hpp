// What `baton launch` starts, decided from its flags, the environment and the machine before
// anything runs: the topology (flags, else the Slurm job's placement, else one node), the run id,
// the ranks on this node (`--nproc-per-node N|gpu|auto`), their GPUs (`--bind-gpus`), the master
// port, the console's rank filter, the seed, and the command every rank runs. Pure: the machine is
// read by the caller and the few things that touch the system (a free port, PATH) are probes, so
// every rule is tested on its own (tests/launch/launch_plan_test.cpp).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "launch/worker_env.hpp"

namespace baton::launch {

// The flags as typed (cli/cmd_launch.cpp fills it; "" and negative numbers: not given).
struct LaunchRequest {
    std::vector<std::string> words;  // the script, module or program, and its arguments
    bool module = false;             // -m: python -m MODULE
    bool no_python = false;          // --no-python: the first word is a program
    std::string python = "python3";  // --python
    std::string nproc_per_node = "1";
    int nnodes = 0;
    int node_rank = -1;
    std::string master_addr;
    std::string master_port;  // a number, "auto" or ""
    int max_restarts = 0;
    std::string run_id;
    std::string local_ranks_filter;  // "0,3"
    std::string seed;
    bool bind_gpus = false;
    std::optional<std::string> nccl_debug;  // --nccl-debug[=SUBSYS]
    std::vector<std::string> nccl;          // --nccl socket|ib|debug (comma-separated, repeatable)
    bool no_gpus = false;                   // --no-gpus (said in the refusals)
};

// What the plan reads of this node: the GPUs the ranks may use, in CUDA_VISIBLE_DEVICES order
// (preflight's visible_gpus), why none could be read ("" when read or not asked), the CPUs this
// process may run on.
struct LaunchMachine {
    std::vector<std::string> gpus;
    std::string gpu_status;
    unsigned usable_cpus = 1;
};

// The plan's reach into the system, replaced in tests.
struct LaunchProbes {
    // This node, read once the flags are found sound (the caller loads the config and samples the
    // GPUs here: a mistyped flag is said before any of that, and before a broken config).
    std::function<Result<LaunchMachine>()> machine;
    std::function<Result<int>()> free_port;              // a port free on this node now (pick_free_port)
    std::function<Status(int)> port_free;                // whether rank 0's port is free here (check_port_free)
    std::function<std::string()> new_run_id;             // "20261201-071203-3f9a1c"
    std::function<bool(const std::string&)> runnable;    // a program on PATH (or a path) this user may run
    std::function<Status(const std::string&)> readable;  // the script can be opened
    // The network interface that routes to this host name or address (--nccl socket|ib), or none.
    std::function<std::optional<std::string>(const std::string&)> interface_to;
};

struct LaunchPlan {
    LaunchTopology topology;
    std::vector<std::string> argv;  // what every local rank runs
    WorkerExtras extras;            // the seed, --nccl-debug, the bound GPUs, the CPUs
    std::optional<std::set<int>> console_ranks;
    std::vector<std::string> warnings;  // said before the start ("4 ranks on 2 GPUs: ...")
};

// The plan, or why not: invalid_argument for flags that contradict each other or the topology
// (the caller's exit 2); not_found for a program, Python or script that cannot be run or opened
// (exit 127); failed for the rest (no GPU for --bind-gpus, the port taken, Slurm's variables
// unreadable: exit 1). Messages start with "launch: ".
Result<LaunchPlan> plan_launch(const LaunchRequest& r, const EnvLookup& env, const LaunchProbes& probes);

// The probes of this machine but `machine`: pick_free_port, check_port_free, a new time-ordered
// run id, PATH as execvp searches it, access(2).
LaunchProbes system_launch_probes();

// The CPUs this process may run on (its affinity), at least 1.
unsigned usable_cpus();

}  // namespace baton::launch
