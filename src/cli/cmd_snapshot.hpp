// `baton snapshot`: one or more snapshots as text, JSON (Lines) or Prometheus text.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct SnapshotArgs {
    bool json = false;
    bool prometheus = false;
    int count = 1;
    double interval = 1.0;
    bool no_processes = false;
    bool no_gpus = false;
    std::string proc_root, sys_root;
    int top = 10;
    // --hosts: the snapshots of these hosts' agents instead of this machine's (serve/hosts.hpp).
    std::string hosts;
    std::string token_file;  // "": [serve] token_file
    double timeout_seconds = 2;
};

// Declares the subcommand and its flags on `app`, storing into `args`.
CLI::App* add_snapshot_command(CLI::App& app, SnapshotArgs& args);

// Runs it; `config_path` is the global --config value (may be empty). Returns the exit code.
int run_snapshot(const SnapshotArgs& args, const std::string& config_path);

}  // namespace baton::cli
