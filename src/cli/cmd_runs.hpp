// `baton runs`: the recorded runs (store/history.hpp).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct RunsArgs {
    std::string db;
    bool json = false;
};

CLI::App* add_runs_command(CLI::App& app, RunsArgs& args);
int run_runs(const RunsArgs& args);

}  // namespace baton::cli
