// `baton top`: the live view of the whole training box (src/ui/).
#pragma once

#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct TopArgs {
    double delay = 1.0;
    bool once = false;
    int width = 0, height = 0;
    int count = 0;
    bool ascii = false;
    bool tree = false;
    bool gpu_only = false;
    bool kernel_threads = false;
    std::string sort = "gpu-memory";
    std::string filter;
    std::optional<std::string> columns;  // --columns: the table's optional columns
    bool no_gpus = false;
    std::string proc_root, sys_root;
    bool mark_styles = false;
    std::optional<std::string> hosts;  // --hosts: these hosts' agents (else [top] hosts)
    std::string token_file;            // their token
    double timeout_seconds = 2;        // each ask's deadline
    bool local = false;                // this machine, whatever [top] hosts says
    bool free_gpus = false;            // the hosts view starts with free GPUs only
};

CLI::App* add_top_command(CLI::App& app, TopArgs& args);
int run_top(const TopArgs& args, const std::string& config_path);

}  // namespace baton::cli
