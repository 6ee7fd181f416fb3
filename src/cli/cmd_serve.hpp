// `baton serve`: the node agent (src/serve/): Prometheus /metrics, the JSON API, live findings.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct ServeArgs {
    std::string listen;      // "" : [serve] listen, else 127.0.0.1:9835
    double interval = 0;     // 0 : [serve] interval, else 1 s
    std::string token_file;  // "" : [serve] token_file
    bool insecure = false;
    bool no_gpus = false;
    bool dcgm_compat = false;
    std::string proc_root, sys_root;
    std::string db;  // "" : [history] db, else the default state path
    bool no_db = false;
    bool no_http = false;  // the queue's socket only (the agent `baton submit` starts)
    std::string
        socket;  // "" : $BATON_SOCKET, else /run/baton/baton.sock (root), else $XDG_RUNTIME_DIR/baton/baton.sock
};

CLI::App* add_serve_command(CLI::App& app, ServeArgs& args);
int run_serve(const ServeArgs& args, const std::string& config_path);

}  // namespace baton::cli
