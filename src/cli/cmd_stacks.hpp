// `baton stacks RUN | --pid PID`: the Python stacks of every thread of a running job's processes,
// asked for by signal from the stack handler baton run and baton launch put into them (hang/),
// grouped across ranks. No change to the user's code, no ptrace.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct StacksArgs {
    std::string run;  // a run id of the history (a running `baton run` or `baton launch`)
    long pid = 0;     // --pid: a process and what it started
    std::string db;
    bool json = false;
    bool threads = false;  // every thread, not only the main ones
    bool all = false;      // every process with a handler, not only the ranks
    double timeout = 2;
};

CLI::App* add_stacks_command(CLI::App& app, StacksArgs& args);
int run_stacks(const StacksArgs& args, const std::string& config_path);

}  // namespace baton::cli
