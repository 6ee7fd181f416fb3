// The endpoints of baton serve (docs/api.md): /metrics, /api/v1/{health,snapshot,findings}, and
// the index page. Turns an HttpRequest into an HttpResponse from the SamplingLoop's latest state, with
// the bearer-token rule applied first. Errors are JSON objects {"error": MESSAGE} with a 4xx
// status. Runs on the HTTP thread only (set_options too: SIGHUP is handled in that loop).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/sampling_loop.hpp"
#include "serve/http_server.hpp"
#include "formats/snapshot_json.hpp"
#include "formats/prometheus_text.hpp"
#include "formats/snapshot_prometheus.hpp"

namespace baton::serve {

struct ServiceOptions {
    std::string token;                   // "" : no token asked (a loopback listen, or --insecure)
    bool metrics_without_token = false;  // /metrics answers without it
    // Off loopback without a token, with metrics_without_token: /metrics (and the page's files) are
    // served, every other endpoint is refused (there is no token that could open it).
    bool api_closed = false;
    // The Host headers a request may carry ("name" or "[v6]", lower case, without the port): on a
    // loopback listener, so that a web page whose name was pointed at 127.0.0.1 (DNS rebinding)
    // reads nothing. Empty: any Host (a listener other machines reach, behind the token).
    std::vector<std::string> allowed_hosts;
    formats::PrometheusOptions prometheus;
    std::string cgroup_root = "/sys/fs/cgroup";  // where --jobstats-compat reads the Slurm jobs' cgroups
    std::string version, commit;                 // baton_build_info
    double interval_seconds = 1;                 // for /api/v1/health's staleness rule
};

class Service {
  public:
    // `store`: a reading connection to the history database (runs, and the machine history past
    // the memory), used on the HTTP thread only; null without a database.
    Service(const SamplingLoop& agent, ServiceOptions options, store::History* store = nullptr)
        : agent_(agent), options_(std::move(options)), store_(store) {}
    HttpResponse handle(const HttpRequest& r);
    void set_options(ServiceOptions o) {
        options_ = std::move(o);
        ++options_version_;
    }
    const ServiceOptions& options() const { return options_; }
    // More families for /metrics, appended after the agent's own (the job queue's: agent/ wires it).
    // Set before the HTTP server starts; called on the HTTP thread.
    void set_more_metrics(std::function<void(formats::Exposition&)> more) { more_metrics_ = std::move(more); }

  private:
    HttpResponse route(const HttpRequest& r);
    HttpResponse metrics(const SampledTick& s);
    HttpResponse health(const SampledTick& s) const;
    HttpResponse snapshot(const HttpRequest& r, const SampledTick& s);
    HttpResponse findings(const SampledTick& s) const;
    HttpResponse jobs(const HttpRequest& r) const;

    const SamplingLoop& agent_;
    ServiceOptions options_;
    store::History* store_;
    // What a sample's snapshot gives, built once per sample: the agent publishes a new snapshot
    // object each tick, so the snapshot each text was built from says whether it is current.
    struct Cache {
        std::shared_ptr<const Snapshot> metrics_of;
        unsigned metrics_options_version = 0;
        std::string metrics;  // the snapshot's families, Prometheus text
        // /api/v1/snapshot's JSON: whole, and with ?processes=gpu (1) and ?cores=none (2) (baton top --hosts)
        struct Json {
            std::shared_ptr<const Snapshot> of;
            std::string text;
            formats::SnapshotJsonEncoder encoder;
        } json[4];
    } cache_;
    unsigned options_version_ = 1;
    std::function<void(formats::Exposition&)> more_metrics_;
    double last_scrape_seconds_ = -1;  // the previous /metrics's duration, -1 before the first
};

// Whether a Host header names one of `allowed` (see ServiceOptions::allowed_hosts): its port
// dropped, compared without case and without a final dot. An absent Host is refused where there is
// a list (every HTTP/1.1 client sends one; a rule that a missing header skipped would be no rule).
bool host_allowed(std::string_view host, const std::vector<std::string>& allowed);

// {"error": message}
HttpResponse json_error(int status, const std::string& message);

}  // namespace baton::serve
