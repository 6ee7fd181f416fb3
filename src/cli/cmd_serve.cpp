#include "cli/cmd_serve.hpp"

#include <csignal>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/config.hpp"
#include "core/printable.hpp"
#include "serve/agent.hpp"
#include "serve/auth.hpp"
#include "serve/http_server.hpp"
#include "serve/listen_address.hpp"
#include "serve/service.hpp"

#include "baton_git_commit.hpp"  // generated at build time: BATON_GIT_COMMIT

#ifndef BATON_VERSION
#define BATON_VERSION "0.0.0-dev"
#endif

namespace baton::cli {

namespace {

// The settings a SIGHUP may change: everything but the listen address, the interval and the
// sampler's roots (those need a restart, which the reload message says).
struct Settings {
    serve::ListenAddress listen;
    double interval = 1;
    serve::ServiceOptions service;
    Thresholds thresholds;
};

// The settings from the config layers with the flags over them; an error is one line.
Result<Settings> settings(const ServeArgs& a, const Config& c) {
    Settings s;
    Result<serve::ListenAddress> listen = serve::parse_listen_address(a.listen.empty() ? c.serve_listen : a.listen);
    if (!listen.ok()) return listen.error();
    s.listen = *listen;
    s.interval = a.interval > 0 ? a.interval : c.serve_interval_seconds;
    const std::string token_file = a.token_file.empty() ? c.serve_token_file : a.token_file;
    if (!token_file.empty()) {
        Result<std::string> token = serve::read_token_file(token_file);
        if (!token.ok()) return token.error();
        s.service.token = *token;
    } else if (!s.listen.loopback() && !a.insecure) {
        return make_error("--listen " + s.listen.text() +
                          " can be reached from other machines: give --token-file FILE (clients then send "
                          "'Authorization: Bearer TOKEN'), or --insecure to serve without a token");
    }
    s.service.metrics_without_token = c.serve_metrics_without_token;
    s.service.prometheus.process_series = c.serve_process_series;
    s.service.prometheus.dcgm_compat = a.dcgm_compat || c.serve_dcgm_compat;
    s.service.version = BATON_VERSION;
    s.service.commit = BATON_GIT_COMMIT;
    s.service.interval_seconds = s.interval;
    s.thresholds = c.thresholds;
    return s;
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "serve", "Run the node agent: Prometheus /metrics, the JSON API and live findings over HTTP");
    cmd->add_option("--listen", a.listen,
                    "ADDRESS:PORT to listen on (default 127.0.0.1:9835; :PORT for every interface; port 0: any free)");
    add_duration_option(cmd, "--interval", a.interval, "Time between samples, 0.1 s to 60 s (default 1s)", 0.1, 60);
    cmd->add_option("--token-file", a.token_file,
                    "File whose first line is the bearer token clients must send (needed off loopback)");
    cmd->add_flag("--insecure", a.insecure, "Serve a non-loopback address without a token");
    cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML");
    cmd->add_flag("--dcgm-compat", a.dcgm_compat, "Also export dcgm-exporter's DCGM_FI_* metrics");
    CLI::Option* db = cmd->add_option(
        "--db", a.db, "History database: runs and the machine history (default: [history] db, else the state path)");
    cmd->add_flag("--no-db", a.no_db, "Keep no history on disk: the last 15 minutes in memory only")->excludes(db);
    cmd->add_option("--proc-root", a.proc_root, "Read /proc from this directory");
    cmd->add_option("--sys-root", a.sys_root, "Read /sys from this directory");
    return cmd;
}

int run_serve(const ServeArgs& a, const std::string& config_path) {
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    Result<Settings> s = settings(a, *cfg);
    if (!s.ok()) return usage_error(s.error().message);
    Result<SamplerOptions> sampler = sampler_options(*cfg, a.proc_root, a.sys_root, a.no_gpus);
    if (!sampler.ok()) return usage_error(sampler.error().message);
    std::signal(SIGPIPE, SIG_IGN);
    raise_open_file_limit();  // the sampler's kept files and every client's connection

    // Two connections to the history: the agent's thread writes minutes, the HTTP thread reads.
    std::optional<History> writer, reader;
    if (!a.no_db) {
        Result<std::string> path = history_path(a.db, config_path);
        if (!path.ok()) return runtime_error(path.error().message);
        Result<History> w = History::open(*path, HistoryAccess::record);
        if (!w.ok()) return runtime_error(w.error().message + " (--no-db keeps no history on disk)");
        Result<History> r = History::open(*path, HistoryAccess::read);
        if (!r.ok()) return runtime_error(r.error().message);
        writer.emplace(std::move(*w));
        reader.emplace(std::move(*r));
    }

    serve::AgentOptions ao;
    ao.sampler = *sampler;
    // An agent reads every process every second for months: one idle for 30 s is taken as idle
    // between its full reads instead of checked each tick (os::ProcessTable says what that gives
    // up; [sample] skip_idle_processes = false turns it off with the rest of the idle skipping).
    ao.sampler.trust_idle_after_seconds = 30;
    ao.interval_seconds = s->interval;
    ao.thresholds = s->thresholds;
    ao.retention_seconds = cfg->serve_retention_seconds;
    serve::Agent agent(ao, std::move(writer));
    serve::Service service(agent, s->service, reader ? &*reader : nullptr);
    serve::HttpServerOptions ho;
    ho.address = s->listen;
    Result<std::unique_ptr<serve::HttpServer>> server =
        serve::HttpServer::listen(ho, [&](const serve::HttpRequest& r) { return service.handle(r); });
    if (!server.ok()) return runtime_error(server.error().message);
    agent.start();
    serve::ListenAddress bound = s->listen;
    bound.port = (*server)->port();
    std::fprintf(stderr, "baton: serving on http://%s (metrics at /metrics)%s\n", bound.text().c_str(),
                 s->service.token.empty() ? "" : "; clients send the token");

    const Settings started = *s;
    (*server)->run({SIGTERM, SIGINT, SIGHUP}, [&](int sig) {
        if (sig != SIGHUP) {
            (*server)->stop();
            return;
        }
        Result<Config> c = load_config(config_path);
        Result<Settings> next = c.ok() ? settings(a, *c) : Result<Settings>(c.error());
        if (!next.ok()) {
            std::fprintf(stderr, "baton: the config was not reloaded, the old one stays: %s\n",
                         escaped_line(next.error().message).c_str());
            return;
        }
        if (next->listen.text() != started.listen.text() || next->interval != started.interval)
            std::fprintf(stderr, "baton: a new listen address or interval takes effect when baton serve restarts\n");
        agent.set_thresholds(next->thresholds);
        agent.set_retention(c->serve_retention_seconds);
        next->service.interval_seconds = started.interval;
        service.set_options(next->service);
        std::fprintf(stderr, "baton: config reloaded\n");
    });
    agent.stop();
    std::fprintf(stderr, "baton: stopped\n");
    return kExitOk;
}

}  // namespace baton::cli
