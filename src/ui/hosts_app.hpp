// baton top --hosts: the screen of several hosts (interactive, batch for pipes, one frame for
// --once), and each host's full view (baton top's own screen, on that host's snapshots) behind
// Enter. The readings come from a HostsSource, so this side knows no sockets.
#pragma once

#include <string>
#include <vector>

#include "ui/hosts_view.hpp"
#include "ui/top_app.hpp"

namespace baton::ui {

// Where the hosts' readings come from (in baton: their agents, asked by serve's HostPoller).
class HostsSource {
  public:
    virtual ~HostsSource() = default;
    // Readable when views() has news.
    virtual int ready_fd() const = 0;
    // Every host as it stands now, in the order given; empties ready_fd.
    virtual std::vector<HostView> views() = 0;
    // The host whose full view is shown (every process of it is asked for); empty: none.
    virtual void open(const std::string& host) = 0;
    // Waits until every host answered or failed once, `seconds` at most.
    virtual void wait_first_round(double seconds) = 0;
};

struct HostsOptions {
    TopOptions top;  // the refresh, thresholds, colour, size and count; the full view's first state
    HostsViewState view;
    double first_round_seconds = 2.5;  // how long a printed frame waits for the hosts' first answers
};

// Runs until `q`, Ctrl-C, SIGTERM or SIGHUP; the exit code as run_top_interactive's.
Result<int> run_hosts_interactive(const HostsOptions& o, HostsSource& source);
// Prints the hosts' frame every delay (TERM=dumb, or output not a terminal).
int run_hosts_batch(const HostsOptions& o, HostsSource& source);
// One frame, once every host answered or failed. `marked`: style classes marked {style}..{/}.
std::string hosts_once(const HostsOptions& o, HostsSource& source, bool marked);

}  // namespace baton::ui
