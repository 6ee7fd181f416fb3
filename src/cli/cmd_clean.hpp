// `baton clean`: the safe `pkill -9 python`. Lists what holds GPUs or memory for nothing (orphaned
// ranks and workers with GPU memory, leftovers of a baton run, launch or queued job whose baton
// ended, defunct processes and the parents that do not reap them) and ends, by pid and after
// confirmation, the caller's own (clean/; users' side in docs/clean.md).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct CleanArgs {
    bool dry_run = false;
    bool yes = false;
    int gpu = -1;  // -1: every GPU
    double older_than = 0;
    bool json = false;
    double grace = 5;
    bool no_gpus = false;
    std::string db;  // the history that names an ended owner's run or job
};

CLI::App* add_clean_command(CLI::App& app, CleanArgs& args);
int run_clean(const CleanArgs& args, const std::string& config_path);

}  // namespace baton::cli
