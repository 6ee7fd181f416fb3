// A few boxes at once without a monitoring stack (`baton snapshot --hosts`, issue 37): each host's
// agent (baton serve) asked for its /api/v1/snapshot, all at the same time, each on its own
// deadline, so a slow or dead host is said on its own line and never holds up the others.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "sample/snapshot.hpp"

namespace baton::serve {

struct HostAddress {
    std::string name;  // as given ("gpu3", "10.0.0.7:9900", "[fd00::7]")
    std::string url;   // http://HOST:PORT
};

// "a,b:9900,[fd00::7]:22866,10.0.0.7" (blanks around names allowed): each HOST[:PORT], `default_port`
// where none is given. An error names the first entry that is not one (a name of letters, digits,
// '.', '-' and '_', an IPv4 address, or an IPv6 one in brackets; a port 1 to 65535); at most 256
// hosts, each once.
Result<std::vector<HostAddress>> parse_hosts(const std::string& list, int default_port);

// waiting: asked, no answer yet (baton top --hosts, before a host's first answer or deadline).
enum class HostState { ok, stale, down, unauthorized, bad_answer, waiting };
const char* host_state_name(HostState s);

struct HostSnapshot {
    HostAddress host;
    HostState state = HostState::down;
    std::string error;                       // why, when not ok ("connection refused", "no answer within 2 s")
    double seconds = 0;                      // how long its answer took
    std::string snapshot;                    // the agent's snapshot JSON as it came (ok and stale)
    std::shared_ptr<const Snapshot> parsed;  // the same, read (every key checked)
    double age_seconds = 0;                  // how old that snapshot was when it came
};

class HttpConnection;

// Asks one host for `path` (its /api/v1/snapshot, with or without ?processes=gpu) on `c`.
HostSnapshot ask_host(HttpConnection& c, const HostAddress& h, const std::string& path, const std::string& token,
                      double timeout_seconds, double stale_seconds);

// Asks every host at once (one thread each) and waits for all, `timeout_seconds` at most for each.
// A snapshot older than `stale_seconds` (its agent stopped sampling) is stale. In the order given.
std::vector<HostSnapshot> fetch_snapshots(const std::vector<HostAddress>& hosts, const std::string& token,
                                          double timeout_seconds, double stale_seconds = 10);

}  // namespace baton::serve
