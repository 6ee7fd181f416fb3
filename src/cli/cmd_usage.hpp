// `baton usage`: who used this machine's GPUs and CPUs, per user and per job (the queue's jobs and
// the processes outside it that held a GPU), from what the agent integrated from its samples: the
// `seff` a shared box without Slurm lacks. docs/queue.md#usage.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct UsageArgs {
    double since_seconds = 7 * 86400;
    std::string user;  // "": everyone
    std::string db;    // "": ask the agent; else read this history file
    bool json = false;
};

CLI::App* add_usage_command(CLI::App& app, UsageArgs& args);
int run_usage(const UsageArgs& args, const std::string& config_path);

}  // namespace baton::cli
