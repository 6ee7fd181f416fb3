// `baton run -- CMD ARGS...`: watch a command end to end.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace baton::cli {

struct RunArgs {
    double interval = 0.5;
    double grace = 10;
    std::string name;
    bool quiet = false;
    bool no_gpus = false;
    std::string db;  // empty: the default path
    bool no_db = false;
    std::string report;               // --report FILE.html: written from the history at the end
    std::string summary_json;         // --summary-json FILE: the summary as JSON ("-": stdout)
    double hang_seconds = -1;         // -1: [launch] hang_seconds
    std::string on_hang;              // "": [launch] on_hang
    bool profile = false;             // --profile[=STEPS]: a profiler window inside the hook
    int profile_steps = 0;            // its STEPS; 0: [profile] steps
    bool profile_auto = false;        // --profile=auto
    std::int64_t memory_history = 0;  // --memory-history[=EVENTS]: allocation events kept (0: none)
    bool no_auto_hook = false;        // --no-auto-hook
    bool tuned = false;               // --tuned: the winner of the last `baton tune` of this command
    bool tune_live = false;           // --tune-live: workers and prefetch tuned while it runs
};

// Where the command begins in baton's arguments (argv without argv[0]): the word after "--",
// or the first word after `run` (or `submit`, `launch`, `bench scaling`) that is not one of its options (or a
// global one: they fall through); args.size() when none. The words from there on are the command's own and are not
// given to the option parser. Which options take a value is read from `app`'s definitions.
std::size_t split_run_command(const CLI::App& app, const std::vector<std::string>& args);

CLI::App* add_run_command(CLI::App& app, RunArgs& args);
// `command`: the words split_run_command() cut off (a leading "--" is dropped).
int run_run(const RunArgs& args, const std::vector<std::string>& command, const std::string& config_path);

}  // namespace baton::cli
