// `baton top --hosts`: each host's agent asked for its snapshot every refresh, by a thread of its own
// over a connection kept open between asks, each ask on its own deadline. A slow or dead host only
// delays its own thread; the screen reads the newest reading of every host whenever it draws.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "diagnose/finding.hpp"
#include "sample/snapshot.hpp"
#include "serve/hosts.hpp"

namespace baton::serve {

struct PollerOptions {
    double interval_seconds = 1;        // between two asks of one host (start to start)
    double timeout_seconds = 2;         // one ask's deadline, connecting included
    double stale_seconds = 10;          // an agent whose snapshot is older than this has stopped sampling
    double findings_every_seconds = 5;  // its active findings are asked this often
};

// What one host said last.
struct HostReading {
    HostAddress host;
    HostState state = HostState::waiting;
    std::string error;                         // why not ok
    std::shared_ptr<const Snapshot> snapshot;  // the last snapshot read from it (kept while it is down)
    bool full = false;                         // that snapshot lists every process (else those on a GPU)
    std::vector<diagnose::Finding> findings;   // its agent's active findings (rule, severity, subject, summary)
    double answered_at = 0;                    // monotonic time its last snapshot came; 0: none yet
    double seconds = 0;                        // how long its last answer took
    std::uint64_t snapshots = 0;               // snapshots read from it so far
    int connections = 0;                       // TCP connections opened to it so far
};

// The findings of an agent's /api/v1/findings answer (docs/api.md); an error when it is not one.
Result<std::vector<diagnose::Finding>> parse_findings_answer(const std::string& body);

class HostPoller {
  public:
    // `tokens[i]`: host i's bearer token (empty: none). Starts asking at once.
    HostPoller(std::vector<HostAddress> hosts, std::vector<std::string> tokens, PollerOptions o);
    ~HostPoller();  // stops every thread at once (an ask under way is cut short)
    HostPoller(const HostPoller&) = delete;
    HostPoller& operator=(const HostPoller&) = delete;

    // Readable when a host has news that readings() has not given; readings() empties it.
    int ready_fd() const { return ready_fd_; }
    // Every host's reading, in the order given. An ok host whose asks have not come back for
    // 3 intervals (and at least 2 s) is said stale here, with how long it has been.
    std::vector<HostReading> readings();
    // The host whose every process is asked (its full view is open), asked again at once; none:
    // each host's processes on a GPU alone.
    void set_full(std::optional<std::size_t> host);
    // Waits until every host answered or failed once, `seconds` at most (one frame: --once).
    void wait_first_round(double seconds);

  private:
    void loop(std::size_t i);

    std::vector<std::string> tokens_;
    PollerOptions options_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<HostReading> readings_;
    std::optional<std::size_t> full_;
    std::size_t first_round_left_ = 0;
    bool stop_ = false;
    int ready_fd_ = -1;
    int stop_fd_ = -1;  // readable once stopping: cuts the asks under way short
    std::vector<std::thread> threads_;
};

}  // namespace baton::serve
