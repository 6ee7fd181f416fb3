#include "cli/top_hosts.hpp"

#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "cli/cli_common.hpp"
#include "serve/auth.hpp"
#include "serve/host_poller.hpp"

namespace baton::cli {

namespace {

ui::HostStatus status_of(serve::HostState s) {
    switch (s) {
        case serve::HostState::ok:
            return ui::HostStatus::ok;
        case serve::HostState::stale:
            return ui::HostStatus::stale;
        case serve::HostState::down:
            return ui::HostStatus::down;
        case serve::HostState::unauthorized:
            return ui::HostStatus::unauthorized;
        case serve::HostState::bad_answer:
            return ui::HostStatus::bad_answer;
        case serve::HostState::waiting:
            break;
    }
    return ui::HostStatus::waiting;
}

// The screen's source: the poller's readings as the screen's HostViews.
class PollerSource : public ui::HostsSource {
  public:
    PollerSource(std::vector<serve::HostAddress> hosts, std::vector<std::string> tokens, serve::PollerOptions o)
        : names_(names_of(hosts)), poller_(std::move(hosts), std::move(tokens), o) {}

    int ready_fd() const override { return poller_.ready_fd(); }

    std::vector<ui::HostView> views() override {
        std::vector<ui::HostView> out;
        for (serve::HostReading& r : poller_.readings()) {
            ui::HostView v;
            v.name = r.host.name;
            v.url = r.host.url;
            v.status = status_of(r.state);
            v.error = std::move(r.error);
            v.snapshot = std::move(r.snapshot);
            v.full_processes = r.full;
            v.findings = std::move(r.findings);
            v.answer_seconds = r.seconds;
            v.snapshots = r.snapshots;
            out.push_back(std::move(v));
        }
        return out;
    }

    void open(const std::string& host) override {
        std::optional<std::size_t> index;
        for (std::size_t i = 0; i < names_.size(); ++i)
            if (names_[i] == host) index = i;
        poller_.set_full(index);
    }

    void wait_first_round(double seconds) override { poller_.wait_first_round(seconds); }

  private:
    static std::vector<std::string> names_of(const std::vector<serve::HostAddress>& hosts) {
        std::vector<std::string> out;
        for (const serve::HostAddress& h : hosts) out.push_back(h.name);
        return out;
    }

    std::vector<std::string> names_;
    serve::HostPoller poller_;
};

// Each host's token: its own from [top] host_token_files (the host named as in the list, or at the
// same address), else the shared one.
Result<std::vector<std::string>> host_tokens(const std::vector<serve::HostAddress>& hosts, const TopHostsArgs& a,
                                             const Config& c, int default_port) {
    const Result<std::string> shared =
        serve::asker_token(!a.token_file.empty() ? a.token_file : c.top.token_file, c.serve.token_file);
    if (!shared.ok()) return shared.error();
    std::vector<std::string> tokens(hosts.size(), *shared);
    for (const std::string& pair : c.top.host_token_files) {
        const std::size_t eq = pair.find('=');
        Result<std::vector<serve::HostAddress>> named = serve::parse_hosts(pair.substr(0, eq), default_port);
        if (!named.ok() || named->size() != 1)
            return Error{"config [top] host_token_files: '" + pair.substr(0, eq) + "' is not HOST[:PORT]",
                         ErrorCode::invalid_argument};
        for (std::size_t i = 0; i < hosts.size(); ++i) {
            if (hosts[i].url != named->front().url) continue;
            Result<std::string> t = serve::read_token_file(pair.substr(eq + 1));
            if (!t.ok()) return Error{"config [top] host_token_files: " + t.error().message, t.error().code};
            tokens[i] = *t;
        }
        // (a token for a host not asked this time is fine: --hosts may name a few of them)
    }
    return tokens;
}

}  // namespace

int run_top_hosts(const TopHostsArgs& a, const Config& c, ui::HostsOptions o) {
    const int default_port = agent_port(c);
    Result<std::vector<serve::HostAddress>> hosts = serve::parse_hosts(a.hosts, default_port);
    if (!hosts.ok()) return usage_error(hosts.error().message);
    Result<std::vector<std::string>> tokens = host_tokens(*hosts, a, c, default_port);
    if (!tokens.ok()) return runtime_error(tokens.error().message);
    serve::PollerOptions po;
    po.interval_seconds = o.top.delay_seconds;
    po.timeout_seconds = a.timeout_seconds;
    po.findings_every_seconds = std::max(5.0, o.top.delay_seconds);
    o.first_round_seconds = a.timeout_seconds + 0.5;
    PollerSource source(std::move(*hosts), std::move(*tokens), po);
    if (a.once) {
        write_stdout(ui::hosts_once(o, source, a.mark_styles));
        return kExitOk;
    }
    const char* term = std::getenv("TERM");
    const bool dumb = !term || !*term || std::strcmp(term, "dumb") == 0;
    if (dumb || !isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) return ui::run_hosts_batch(o, source);
    const Result<int> rc = ui::run_hosts_interactive(o, source);
    return rc.ok() ? *rc : runtime_error(rc.error().message);
}

}  // namespace baton::cli
