#include "agent/node_agent.hpp"

#include <pthread.h>

#include <cstdio>

#include "core/printable.hpp"
#include "queue/queue_server.hpp"
#include "queue/spawner.hpp"
#include "serve/sampling_loop.hpp"
#include "serve/http_server.hpp"
#include "serve/service.hpp"

namespace baton::agent {

namespace {

// Without HTTP, the main thread only waits for the signals (SIGHUP reloads the thresholds).
void wait_for_signals(const sigset_t& set, const std::function<bool(int)>& on_signal) {
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (!on_signal(sig)) return;
    }
}

}  // namespace

Result<std::unique_ptr<NodeAgent>> NodeAgent::open(NodeAgentOptions options, const Config& config) {
    const ServeFlags& flags = options.flags;
    Result<ServeSettings> settings = serve_settings(flags, config);
    if (!settings.ok()) return settings.error();
    if (flags.no_db && flags.no_http)
        return make_error(ErrorCode::invalid_argument,
                          "serve: --no-http --no-db leaves nothing to serve: the queue keeps its jobs in the history");
    std::unique_ptr<NodeAgent> n(new NodeAgent());
    n->settings_ = std::move(*settings);
    n->settings_.service.version = options.version;
    n->settings_.service.commit = options.commit;

    // Block the stop signals before any thread starts, so that only the main thread takes them
    // (HttpServer::run or wait_for_signals), never a sampling or queue thread.
    sigemptyset(&n->stop_signals_);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&n->stop_signals_, sig);
    pthread_sigmask(SIG_BLOCK, &n->stop_signals_, nullptr);

    // The queue's job starter, forked now that this process has one thread and little memory
    // (queue/spawner.hpp); without it the queue forks and execs each job's supervisor itself.
    if (!flags.no_db) {
        Result<std::unique_ptr<queue::Spawner>> sp = queue::Spawner::start();
        if (sp.ok())
            n->spawner_ = std::move(*sp);
        else
            std::fprintf(stderr, "baton: %s\n", sp.error().message.c_str());
    }

    // Two connections to the history: the agent's thread writes minutes, the HTTP thread reads.
    std::optional<store::History> writer;
    if (!flags.no_db) {
        Result<store::History> w = store::History::open(options.db_path, store::HistoryAccess::record);
        if (!w.ok()) return make_error(w.error().code, w.error().message + " (--no-db keeps no history on disk)");
        Result<store::History> r = store::History::open(options.db_path, store::HistoryAccess::read);
        if (!r.ok()) return r.error();
        writer.emplace(std::move(*w));
        n->reader_.emplace(std::move(*r));
    }

    serve::SamplingOptions ao;
    ao.sampler = options.sampler;
    // An agent reads every process every second for months: one idle for 30 s is taken as idle
    // between its full reads instead of checked each tick (os::ProcessTable says what that gives
    // up; [sample] skip_idle_processes = false turns it off with the rest of the idle skipping).
    ao.sampler.trust_idle_after_seconds = 30;
    ao.interval_seconds = n->settings_.interval;
    ao.thresholds = n->settings_.thresholds;
    ao.retention_seconds = config.serve.retention_seconds;
    ao.idle_allocated_minutes = config.serve.idle_allocated_minutes;
    ao.on_tick = [queue = &n->ticking_queue_](const diagnose::Window& w, std::vector<diagnose::Finding>& found,
                                              std::vector<diagnose::OtherJob>& others) {
        if (queue::QueueServer* q = queue->load()) q->on_tick(w, found, others);
    };
    n->agent_ = std::make_unique<serve::SamplingLoop>(ao, std::move(writer));

    // The queue (docs/queue.md): it needs the history (its jobs live there) and a socket.
    if (flags.no_db) {
        std::fprintf(stderr, "baton: no job queue: it keeps its jobs in the history database (drop --no-db)\n");
    } else {
        Result<queue::QueueServerOptions> qo =
            queue_options(flags, config, options.db_path, options.sampler, this_machine(options.env));
        serve::SamplingLoop* agent = n->agent_.get();
        if (qo.ok()) {
            qo->spawner = n->spawner_;
            qo->live_usage = [agent] { return agent->usage_records(); };
        }
        Result<std::unique_ptr<queue::QueueServer>> q =
            qo.ok() ? queue::QueueServer::open(*qo, [agent] { return agent->state().snapshot; })
                    : Result<std::unique_ptr<queue::QueueServer>>(qo.error());
        if (q.ok()) {
            n->queue_ = std::move(*q);
        } else if (flags.no_http) {
            return q.error();
        } else {
            std::fprintf(stderr, "baton: no job queue: %s\n", escaped_line(q.error().message).c_str());
        }
    }

    n->service_ =
        std::make_unique<serve::Service>(*n->agent_, n->settings_.service, n->reader_ ? &*n->reader_ : nullptr);
    if (queue::QueueServer* q = n->queue_.get())
        n->service_->set_more_metrics([q](formats::Exposition& e) { q->append_metrics(e); });
    if (!flags.no_http) {
        serve::HttpServerOptions ho;
        ho.address = n->settings_.listen;
        serve::Service* service = n->service_.get();
        Result<std::unique_ptr<serve::HttpServer>> server =
            serve::HttpServer::listen(ho, [service](const serve::HttpRequest& r) { return service->handle(r); });
        if (!server.ok()) return server.error();
        n->http_ = std::move(*server);
    }
    n->options_ = std::move(options);
    return n;
}

NodeAgent::~NodeAgent() = default;

bool NodeAgent::on_signal(int sig) {
    if (sig != SIGHUP) return false;
    Result<Config> c = options_.reload_config();
    Result<ServeSettings> next = c.ok() ? serve_settings(options_.flags, *c) : Result<ServeSettings>(c.error());
    if (!next.ok()) {
        std::fprintf(stderr, "baton: the config was not reloaded, the old one stays: %s\n",
                     escaped_line(next.error().message).c_str());
        return true;
    }
    if (next->listen.text() != settings_.listen.text() || next->interval != settings_.interval)
        std::fprintf(stderr, "baton: a new listen address or interval takes effect when baton serve restarts\n");
    agent_->set_thresholds(next->thresholds);
    agent_->set_retention(c->serve.retention_seconds);
    agent_->set_idle_allocated_minutes(c->serve.idle_allocated_minutes);
    next->service.interval_seconds = settings_.interval;
    next->service.version = settings_.service.version;
    next->service.commit = settings_.service.commit;
    service_->set_options(next->service);
    std::fprintf(stderr, "baton: config reloaded\n");
    return true;
}

void NodeAgent::run() {
    agent_->start();
    if (queue_) {
        ticking_queue_.store(queue_.get());
        queue_->start();
        std::fprintf(stderr, "baton: job queue on %s\n", queue_->socket_path().c_str());
    }
    if (http_) {
        ListenAddress bound = settings_.listen;
        bound.port = http_->port();
        std::fprintf(stderr, "baton: serving on http://%s (metrics at /metrics)%s\n", bound.text().c_str(),
                     !settings_.service.token.empty() ? "; clients send the token"
                     : settings_.service.api_closed   ? "; no token: /metrics alone"
                                                      : "");
        pthread_sigmask(SIG_UNBLOCK, &stop_signals_, nullptr);  // libevent's handlers run on this thread
        http_->run({SIGTERM, SIGINT, SIGHUP}, [this](int sig) {
            if (!on_signal(sig)) http_->stop();
        });
    } else {
        wait_for_signals(stop_signals_, [this](int sig) { return on_signal(sig); });
    }
    // The queue first: its jobs keep running (their supervisors outlive the agent) and the next
    // agent re-adopts them.
    ticking_queue_.store(nullptr);
    if (queue_) queue_->stop();
    agent_->stop();
    queue_.reset();
    std::fprintf(stderr, "baton: stopped\n");
}

}  // namespace baton::agent
