// `baton tune [OPTIONS] -- CMD ARGS...`: try settings on the user's own training script and measure
// whether they help, beyond the noise (docs/tune.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace baton::cli {

struct TuneArgs {
    double budget = 600;
    std::int64_t steps = 30;
    std::vector<std::string> allow;  // "batch-size"
    bool json = false;
    double interval = 0.5;
    double grace = 10;
    std::string name;
    bool no_gpus = false;
    bool no_auto_hook = false;
    std::string db;
    bool no_db = false;
};

CLI::App* add_tune_command(CLI::App& app, TuneArgs& args);
// `command`: the words split_run_command() cut off (a leading "--" is dropped).
int run_tune(const TuneArgs& args, const std::vector<std::string>& command, const std::string& config_path);

}  // namespace baton::cli
