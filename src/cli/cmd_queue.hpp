// The queue's commands (docs/queue.md): `baton submit`, `queue`, `show`, `logs`, `cancel`, `wait`,
// `hold`, `release`, `retry`, `pause`, `resume`, `restart`, `queue clean`, each a client of the agent's socket, and the
// hidden `job-shim` that supervises one job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "queue/job_edit.hpp"
#include "queue/submit_flags.hpp"

namespace CLI {
class App;
}

namespace baton::cli {

struct QueueArgs {
    queue::SubmitFlags submit;
    bool no_auto_hook = false;  // submit --no-auto-hook
    // the others
    std::vector<std::string> jobs;
    bool all = false, follow = false, stderr_stream = false, json = false, successful_only = false;
    double grace = 10;
    bool watch = false;   // baton queue --watch
    double interval = 2;  // ... every this many seconds
    bool pool = false;    // baton queue --gpus
    std::string shim_dir;
    std::string group_name;  // baton group add|remove NAME
    unsigned parallel = 0;   // baton group add --parallel N (0: not given)
    queue::EditFlags edit;   // baton edit
};

struct QueueCommands {
    CLI::App *submit, *queue, *queue_clean, *show, *logs, *cancel, *wait, *hold, *release, *retry, *pause, *resume,
        *restart, *edit, *group, *group_add, *group_remove, *shim;
    // The command that was given, or null.
    CLI::App* parsed() const;
};

QueueCommands add_queue_commands(CLI::App& app, QueueArgs& args);
// True for the name of a command add_queue_commands defines (main.cpp then defines only those).
bool is_queue_command(const std::string& word);
// `command`: submit's command words (split off before parsing, as for `baton run`).
int run_queue_command(const QueueCommands& c, const QueueArgs& args, const std::vector<std::string>& command,
                      const std::string& config_path);

}  // namespace baton::cli
