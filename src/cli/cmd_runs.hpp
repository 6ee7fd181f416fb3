// `baton runs`: the recorded runs (store/history.hpp): list, show, export, prune.
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct RunsArgs {
    std::string db;
    bool json = false;
    std::int64_t run = 0;          // show, export
    std::string format = "jsonl";  // export
    std::string older_than;        // prune
    CLI::App* show = nullptr;
    CLI::App* export_ = nullptr;
    CLI::App* prune = nullptr;
};

CLI::App* add_runs_command(CLI::App& app, RunsArgs& args);
int run_runs(const RunsArgs& args, const std::string& config_path);

}  // namespace baton::cli
