#include "cli/cmd_serve.hpp"

#include <csignal>

#include <CLI/CLI.hpp>

#include "agent/node_agent.hpp"
#include "cli/cli_common.hpp"
#include "core/config.hpp"

#include "baton_git_commit.hpp"  // generated at build time: BATON_GIT_COMMIT

#ifndef BATON_VERSION
#define BATON_VERSION "0.0.0-dev"
#endif

namespace baton::cli {

CLI::App* add_serve_command(CLI::App& app, ServeArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "serve", "Run the node agent: Prometheus /metrics, the JSON API and live findings over HTTP");
    cmd->add_option("--listen", a.listen,
                    "ADDRESS:PORT to listen on (default 127.0.0.1:22866; :PORT for every interface; port 0: any free)");
    add_duration_option(cmd, "--interval", a.interval, "Time between samples, 0.1 s to 60 s (default 1s)", 0.1, 60);
    cmd->add_option("--token-file", a.token_file,
                    "File whose first line is the bearer token clients must send (needed off loopback)");
    cmd->add_flag("--insecure", a.insecure, "Serve a non-loopback address without a token");
    cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML");
    cmd->add_flag("--dcgm-compat", a.dcgm_compat, "Also export dcgm-exporter's DCGM_FI_* metrics");
    cmd->add_flag("--jobstats-compat", a.jobstats_compat,
                  "Also export the cgroup_* and nvidia_gpu_* families Princeton's jobstats queries, per Slurm job");
    CLI::Option* db = cmd->add_option(
        "--db", a.db, "History database: runs and the machine history (default: [history] db, else the state path)");
    cmd->add_flag("--no-db", a.no_db, "Keep no history on disk: the last 15 minutes in memory only")->excludes(db);
    cmd->add_option("--proc-root", a.proc_root, "Read /proc from this directory");
    cmd->add_option("--sys-root", a.sys_root, "Read /sys from this directory");
    cmd->add_flag("--no-http", a.no_http, "No HTTP endpoints: only the queue's socket (the agent baton submit starts)");
    cmd->add_option("--socket", a.socket,
                    "The queue's Unix socket (default: $BATON_SOCKET, else /run/baton/baton.sock for root, else "
                    "$XDG_RUNTIME_DIR/baton/baton.sock)");
    return cmd;
}

int run_serve(const ServeArgs& a, const std::string& config_path) {
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    agent::NodeAgentOptions o;
    o.flags = a;
    Result<SamplerOptions> sampler = sampler_options(*cfg, a.proc_root, a.sys_root, a.no_gpus);
    if (!sampler.ok()) return usage_error(sampler.error().message);
    o.sampler = *sampler;
    if (!a.no_db) {
        Result<std::string> path = history_path(a.db, config_path);
        if (!path.ok()) return runtime_error(path.error().message);
        o.db_path = *path;
    }
    o.env = environment_variables();
    o.version = BATON_VERSION;
    o.commit = BATON_GIT_COMMIT;
    o.reload_config = [config_path] { return load_config(config_path); };
    std::signal(SIGPIPE, SIG_IGN);
    raise_open_file_limit();  // the sampler's kept files and every client's connection
    Result<std::unique_ptr<agent::NodeAgent>> node = agent::NodeAgent::open(std::move(o), *cfg);
    if (!node.ok()) return error_exit(node.error());
    (*node)->run();
    return kExitOk;
}

}  // namespace baton::cli
