// `--listen ADDRESS:PORT` as baton serve and baton bench net take it: an IPv4 address ("127.0.0.1:22866"), an IPv6
// address in brackets ("[::1]:22866"), or a port alone (":22866", meaning every interface). Host
// names are refused: which interfaces a name binds is not obvious, and the token rule depends on it.
#pragma once

#include <string>

#include "core/result.hpp"

namespace baton {

// The agent's port when none is given ([serve] listen, baton top --hosts, jobstats): outside the
// exporters' 9100-9999, below the ephemeral range, clear of the ports a training box uses
// (docs/cli.md, "The default port").
constexpr int kDefaultAgentPort = 22866;

struct ListenAddress {
    std::string host;  // numeric, without brackets; "0.0.0.0" for ":PORT"
    int port = 0;      // 0: any free port (the server says which)
    bool ipv6 = false;
    // Only this machine can connect (127.0.0.0/8 or ::1).
    bool loopback() const;
    std::string text() const;  // "127.0.0.1:22866", "[::1]:22866"
};

Result<ListenAddress> parse_listen_address(const std::string& text);

}  // namespace baton
