// The node agent of `baton serve`, composed: the sampling thread (serve::SamplingLoop) with its history
// writer, the job queue (queue::QueueServer) with its job starter, the HTTP endpoints
// (serve::Service on serve::HttpServer) with their own reading connection, and the signals:
// SIGHUP reloads the config, SIGTERM and SIGINT stop. The order of all this is the point of the
// class (docs/architecture.md, "Threads"): the stop signals are blocked and the job starter forked
// while the process has one thread; at the end the queue stops first, so its jobs keep running
// under their supervisors for the next agent to re-adopt.
#pragma once

#include <atomic>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/agent_settings.hpp"
#include "core/config.hpp"
#include "core/result.hpp"
#include "sample/sampler.hpp"
#include "store/history.hpp"

namespace baton::queue {
class QueueServer;
class Spawner;
}  // namespace baton::queue
namespace baton::serve {
class SamplingLoop;
class HttpServer;
class Service;
}  // namespace baton::serve

namespace baton::agent {

struct NodeAgentOptions {
    ServeFlags flags;
    std::string db_path;                     // the history (runs, minutes, the queue's jobs); empty with --no-db
    SamplerOptions sampler;                  // from the config with --proc-root, --sys-root and --no-gpus over it
    std::map<std::string, std::string> env;  // this process's: the queue's socket, a Slurm allocation
    std::string version, commit;             // what /api/v1/version says
    // The config layers read again at SIGHUP.
    std::function<Result<Config>()> reload_config;
};

class NodeAgent {
  public:
    // Everything opened and bound, nothing running: the history's two connections, the queue's
    // socket, the HTTP port. Errors: invalid_argument for what the user can fix in the flags or
    // config (a bad address, no token off loopback, --no-http with --no-db), else why it cannot run
    // (a history that cannot be opened; with --no-http, a queue that cannot run).
    static Result<std::unique_ptr<NodeAgent>> open(NodeAgentOptions options, const Config& config);
    ~NodeAgent();
    NodeAgent(const NodeAgent&) = delete;
    NodeAgent& operator=(const NodeAgent&) = delete;

    // Starts the threads and serves until SIGTERM or SIGINT, then stops them in order. Call from
    // the thread that called open().
    void run();

  private:
    NodeAgent() = default;
    // SIGHUP: the settings again (a bad config is reported and the old one stays); false for a
    // stop signal.
    bool on_signal(int sig);

    NodeAgentOptions options_;
    ServeSettings settings_;  // as started: a reload cannot change the address or the interval
    sigset_t stop_signals_{};
    std::shared_ptr<queue::Spawner> spawner_;
    std::optional<store::History> reader_;                     // the HTTP thread's connection
    std::atomic<queue::QueueServer*> ticking_queue_{nullptr};  // what the sampling thread ticks
    std::unique_ptr<serve::SamplingLoop> agent_;
    std::unique_ptr<queue::QueueServer> queue_;
    std::unique_ptr<serve::Service> service_;
    std::unique_ptr<serve::HttpServer> http_;
};

}  // namespace baton::agent
