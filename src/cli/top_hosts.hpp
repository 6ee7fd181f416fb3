// `baton top --hosts`: the hosts' agents asked by serve's HostPoller, shown by ui's hosts screen.
// Here only the wiring: which token each host gets, and the readings handed to the screen.
#pragma once

#include <string>

#include "core/config.hpp"
#include "ui/hosts_app.hpp"

namespace baton::cli {

struct TopHostsArgs {
    std::string hosts;       // HOST[:PORT],... as given (--hosts, else [top] hosts)
    std::string token_file;  // --token-file; empty: [top] token_file, else [serve] token_file
    double timeout_seconds = 2;
    bool once = false, mark_styles = false;
};

// Runs the screen (or prints it: --once, batch); returns the exit code.
int run_top_hosts(const TopHostsArgs& a, const Config& c, ui::HostsOptions o);

}  // namespace baton::cli
