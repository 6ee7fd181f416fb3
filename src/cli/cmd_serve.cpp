#include "cli/cmd_serve.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <grp.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/config.hpp"
#include "core/printable.hpp"
#include "queue/queue_client.hpp"
#include "queue/queue_server.hpp"
#include "serve/agent.hpp"
#include "serve/auth.hpp"
#include "serve/http_server.hpp"
#include "core/listen_address.hpp"
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
    ListenAddress listen;
    double interval = 1;
    serve::ServiceOptions service;
    Thresholds thresholds;
};

// The settings from the config layers with the flags over them; an error is one line.
Result<Settings> settings(const ServeArgs& a, const Config& c) {
    Settings s;
    Result<ListenAddress> listen = parse_listen_address(a.listen.empty() ? c.serve_listen : a.listen);
    if (!listen.ok()) return listen.error();
    s.listen = *listen;
    s.interval = a.interval > 0 ? a.interval : c.serve_interval_seconds;
    const std::string token_file = a.token_file.empty() ? c.serve_token_file : a.token_file;
    if (!token_file.empty()) {
        Result<std::string> token = serve::read_token_file(token_file);
        if (!token.ok()) return token.error();
        s.service.token = *token;
    } else if (!s.listen.loopback() && !a.insecure) {
        // [serve] metrics_without_token alone: Prometheus may scrape, nothing else is served.
        if (!c.serve_metrics_without_token)
            return make_error("--listen " + s.listen.text() +
                              " can be reached from other machines: give --token-file FILE (clients then send "
                              "'Authorization: Bearer TOKEN'), [serve] metrics_without_token = true to serve "
                              "/metrics alone, or --insecure to serve everything without a token");
        s.service.api_closed = true;
    }
    s.service.metrics_without_token = c.serve_metrics_without_token;
    if (s.listen.loopback()) {
        s.service.allowed_hosts = {"localhost", "127.0.0.1", "[::1]",
                                   s.listen.ipv6 ? "[" + s.listen.host + "]" : s.listen.host};
        s.service.allowed_hosts.insert(s.service.allowed_hosts.end(), c.serve_allowed_hosts.begin(),
                                       c.serve_allowed_hosts.end());
    }
    s.service.prometheus.process_series = c.serve_process_series;
    s.service.prometheus.dcgm_compat = a.dcgm_compat || c.serve_dcgm_compat;
    s.service.version = BATON_VERSION;
    s.service.commit = BATON_GIT_COMMIT;
    s.service.interval_seconds = s.interval;
    s.thresholds = c.thresholds;
    return s;
}

// The queue's options: its socket (a system agent's is group baton's, 0660), the jobs' directory
// beside the history, the CPUs and memory the agent may hand out, the GPUs (inside a Slurm
// allocation, the allocation's). An error says why the queue cannot run.
Result<queue::QueueServerOptions> queue_options(const ServeArgs& a, const Config& c, const std::string& db_path,
                                                const SamplerOptions& sampler) {
    const std::map<std::string, std::string> env = environment_variables();
    queue::QueueServerOptions o;
    if (!a.socket.empty()) {
        o.socket_path = a.socket;
    } else {
        Result<std::string> place = queue::own_socket_path(env);
        if (!place.ok()) return place.error();
        o.socket_path = *place;
    }
    if (geteuid() == 0) {
        // The system agent: the members of [queue] socket_group (baton) may submit.
        const char* name = c.queue_socket_group.c_str();
        if (const group* g = getgrnam(name)) {
            o.socket_mode = 0660;
            o.socket_group = g->gr_gid;
        } else {
            std::fprintf(stderr,
                         "baton: no group '%s': only root can use the queue (groupadd %s; usermod -aG %s USER)\n", name,
                         name, name);
        }
    }
    o.db_path = db_path;
    o.jobs_dir = db_path.substr(0, db_path.rfind('/') + 1) + "jobs";
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (unsigned i = 0; i < CPU_SETSIZE; ++i)
            if (CPU_ISSET(i, &set)) o.pool.cpus.push_back(i);
    struct sysinfo si {};
    if (sysinfo(&si) == 0) o.pool.memory_bytes = static_cast<std::uint64_t>(si.totalram) * si.mem_unit;
    o.pool.sys_root = sampler.sys_root;
    o.pool.allowed_gpus = queue::allocation_gpus(env);
    o.pool.free_memory_percent = c.queue_free_memory_percent;
    o.pool.share_margin_percent = c.queue_share_margin_percent;
    // Inside an allocation CUDA may number the GPUs it sees from 0: UUIDs name them the same everywhere.
    o.uuid_visible_devices = c.queue_visible_devices_uuid || o.pool.allowed_gpus.has_value();
    if (!a.no_gpus) {
        o.nvml = sampler.nvml;  // the sampler's, from the same config
    }
    o.thresholds = c.thresholds;
    return o;
}

// Without HTTP, the main thread only waits for the signals (SIGHUP reloads the thresholds).
void wait_for_signals(const std::function<bool(int)>& on_signal) {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (!on_signal(sig)) return;
    }
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
    cmd->add_flag("--no-http", a.no_http, "No HTTP endpoints: only the queue's socket (the agent baton submit starts)");
    cmd->add_option("--socket", a.socket,
                    "The queue's Unix socket (default: $BATON_SOCKET, else /run/baton/baton.sock for root, else "
                    "$XDG_RUNTIME_DIR/baton/baton.sock)");
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

    // Block the stop signals before any thread starts, so that only the main thread takes them
    // (HttpServer::run or wait_for_signals), never a sampling or queue thread.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop_signals, sig);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    // The queue's job starter, forked now that this process has one thread and little memory
    // (queue/spawner.hpp); without it the queue forks and execs each job's supervisor itself.
    std::shared_ptr<queue::Spawner> spawner;
    if (!a.no_db) {
        Result<std::unique_ptr<queue::Spawner>> sp = queue::Spawner::start();
        if (sp.ok())
            spawner = std::move(*sp);
        else
            std::fprintf(stderr, "baton: %s\n", sp.error().message.c_str());
    }

    // Two connections to the history: the agent's thread writes minutes, the HTTP thread reads.
    std::optional<History> writer, reader;
    std::string db_path;
    if (!a.no_db) {
        Result<std::string> path = history_path(a.db, config_path);
        if (!path.ok()) return runtime_error(path.error().message);
        db_path = *path;
        Result<History> w = History::open(*path, HistoryAccess::record);
        if (!w.ok()) return runtime_error(w.error().message + " (--no-db keeps no history on disk)");
        Result<History> r = History::open(*path, HistoryAccess::read);
        if (!r.ok()) return runtime_error(r.error().message);
        writer.emplace(std::move(*w));
        reader.emplace(std::move(*r));
    } else if (a.no_http) {
        return usage_error("serve: --no-http --no-db leaves nothing to serve: the queue keeps its jobs in the history");
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
    std::atomic<queue::QueueServer*> queue_server{nullptr};
    ao.on_tick = [&queue_server](const Window& w) {
        if (queue::QueueServer* q = queue_server.load()) q->on_tick(w);
    };
    serve::Agent agent(ao, std::move(writer));

    // The queue (docs/queue.md): it needs the history (its jobs live there) and a socket.
    std::unique_ptr<queue::QueueServer> queue;
    if (a.no_db) {
        std::fprintf(stderr, "baton: no job queue: it keeps its jobs in the history database (drop --no-db)\n");
    } else {
        Result<queue::QueueServerOptions> qo = queue_options(a, *cfg, db_path, *sampler);
        if (qo.ok()) qo->spawner = spawner;
        Result<std::unique_ptr<queue::QueueServer>> q =
            qo.ok() ? queue::QueueServer::open(*qo, [&agent] { return agent.state().snapshot; })
                    : Result<std::unique_ptr<queue::QueueServer>>(qo.error());
        if (q.ok()) {
            queue = std::move(*q);
        } else if (a.no_http) {
            return runtime_error(q.error().message);
        } else {
            std::fprintf(stderr, "baton: no job queue: %s\n", escaped_line(q.error().message).c_str());
        }
    }

    serve::Service service(agent, s->service, reader ? &*reader : nullptr);
    std::unique_ptr<serve::HttpServer> http;
    if (!a.no_http) {
        serve::HttpServerOptions ho;
        ho.address = s->listen;
        Result<std::unique_ptr<serve::HttpServer>> server =
            serve::HttpServer::listen(ho, [&](const serve::HttpRequest& r) { return service.handle(r); });
        if (!server.ok()) return runtime_error(server.error().message);
        http = std::move(*server);
    }
    agent.start();
    if (queue) {
        queue_server.store(queue.get());
        queue->start();
        std::fprintf(stderr, "baton: job queue on %s\n", queue->socket_path().c_str());
    }
    if (http) {
        ListenAddress bound = s->listen;
        bound.port = http->port();
        std::fprintf(stderr, "baton: serving on http://%s (metrics at /metrics)%s\n", bound.text().c_str(),
                     !s->service.token.empty() ? "; clients send the token"
                     : s->service.api_closed   ? "; no token: /metrics alone"
                                               : "");
    }

    const Settings started = *s;
    // SIGHUP: the config again; false from the handler ends the agent.
    auto on_signal = [&](int sig) {
        if (sig != SIGHUP) return false;
        Result<Config> c = load_config(config_path);
        Result<Settings> next = c.ok() ? settings(a, *c) : Result<Settings>(c.error());
        if (!next.ok()) {
            std::fprintf(stderr, "baton: the config was not reloaded, the old one stays: %s\n",
                         escaped_line(next.error().message).c_str());
            return true;
        }
        if (next->listen.text() != started.listen.text() || next->interval != started.interval)
            std::fprintf(stderr, "baton: a new listen address or interval takes effect when baton serve restarts\n");
        agent.set_thresholds(next->thresholds);
        agent.set_retention(c->serve_retention_seconds);
        next->service.interval_seconds = started.interval;
        service.set_options(next->service);
        std::fprintf(stderr, "baton: config reloaded\n");
        return true;
    };
    if (http) {
        pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);  // libevent's handlers run on this thread
        http->run({SIGTERM, SIGINT, SIGHUP}, [&](int sig) {
            if (!on_signal(sig)) http->stop();
        });
    } else {
        wait_for_signals(on_signal);
    }
    // The queue first: its jobs keep running (their supervisors outlive the agent) and the next
    // agent re-adopts them.
    queue_server.store(nullptr);
    if (queue) queue->stop();
    agent.stop();
    queue.reset();
    std::fprintf(stderr, "baton: stopped\n");
    return kExitOk;
}

}  // namespace baton::cli
