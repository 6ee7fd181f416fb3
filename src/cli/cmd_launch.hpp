// `baton launch [OPTIONS] (SCRIPT.py ARGS | -m MODULE ARGS | --no-python CMD ARGS)`: distributed
// training's local ranks with torchrun's environment, pre-flight checks, per-rank logs, a
// root-cause block and a clean teardown (launch/launcher.hpp; users' side in docs/launch.md).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace baton::cli {

struct LaunchArgs {
    std::string nproc_per_node = "1";  // N, gpu or auto
    int nnodes = 0;                    // 0: not given (1, or Slurm's)
    int node_rank = -1;                // -1: not given
    std::string master_addr;
    std::string master_port;  // a number, auto, or "" (not given)
    int max_restarts = 0;
    std::string log_dir;
    bool tee = false;
    std::string local_ranks_filter;
    bool bind_gpus = false;
    std::string seed;
    std::string nccl_debug;
    bool nccl_debug_given = false;
    std::vector<std::string> nccl;  // --nccl socket|ib|debug
    double grace = 10;
    std::string db;
    bool no_db = false;
    std::string report;
    std::string summary_json;
    bool module = false;
    bool no_python = false;
    std::string python = "python3";
    std::string run_id;
    std::string name;
    double interval = 0.5;
    bool quiet = false;
    bool no_gpus = false;
    bool no_auto_hook = false;  // --no-auto-hook
    double hang_seconds = -1;   // -1: [launch] hang_seconds
    std::string on_hang;        // "": [launch] on_hang
};

CLI::App* add_launch_command(CLI::App& app, LaunchArgs& args);
// `command`: the words split_run_command() cut off (the script, module or program, and its arguments).
int run_launch_command(const LaunchArgs& args, const std::vector<std::string>& command, const std::string& config_path);

}  // namespace baton::cli
