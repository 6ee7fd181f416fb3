// `baton runs`: the recorded runs (store/history.hpp): list, show, export, prune.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct RunsArgs {
    std::string db;
    bool json = false;
    std::string run;               // show, export: the id as typed
    std::string format = "jsonl";  // export
    bool steps = false;            // export: the hook's steps instead of the samples
    double older_than = -1;        // prune, seconds
    bool dry_run = false;          // prune
    CLI::App* show = nullptr;
    CLI::App* export_ = nullptr;
    CLI::App* prune = nullptr;
};

CLI::App* add_runs_command(CLI::App& app, RunsArgs& args);
int run_runs(const RunsArgs& args, const std::string& config_path);

}  // namespace baton::cli
