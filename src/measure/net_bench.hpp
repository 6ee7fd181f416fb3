// `baton bench net`: TCP throughput between two baton processes, measured by the receiver, against
// the speed of the sender's interface (/sys/class/net/IF/speed).
//
// The protocol (docs/bench.md): the client opens a control connection and sends one line,
// "BATON-NET 1 TOKEN STREAMS SECONDS"; the server answers "OK" (or "ERR reason"). The client then
// opens STREAMS data connections, each starting with "DATA TOKEN\n", sends 128 KiB writes for
// SECONDS and shuts its side down; the server counts the bytes each stream delivered and, when
// all have ended, answers on the control connection "RESULT BYTES SECONDS" (SECONDS from the first
// byte to the last, by the server's clock). Anything else is refused with one line and closed.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include "measure/bench_report.hpp"
#include "core/listen_address.hpp"
#include "core/result.hpp"
#include "sample/sampler.hpp"

namespace baton::measure {

inline constexpr int kNetDefaultPort = 5301;

struct NetServerOptions {
    ListenAddress listen;
    bool once = false;  // end after one test
    // Called with the address bound (the port, when 0 was asked) and then with one line per test.
    std::function<void(const std::string&)> say;
    const std::atomic<bool>* stop = nullptr;  // set by a signal handler: end between tests
};

// Serves tests until `stop` (or after one with `once`). An error when it cannot listen.
Status run_net_server(const NetServerOptions& o);

struct NetClientOptions {
    std::string host;
    int port = kNetDefaultPort;
    unsigned streams = 4;
    double seconds = 10;
    std::string sys_root = "/sys";
    double ok_share = 0.85;
    SamplerOptions sampler;
};

// One test against a server. An error (one line) when the server cannot be reached or refuses.
Result<BenchReport> run_net_client(const NetClientOptions& o);

// The first line of a connection to the server, parsed: a test's request ("BATON-NET 1 TOKEN
// STREAMS SECONDS"), a data stream's ("DATA TOKEN"), or anything else (refused).
struct NetRequest {
    enum class Kind { test, data, bad } kind = Kind::bad;
    std::string token;     // at most 64 bytes
    unsigned streams = 0;  // 1 to 128
    double seconds = 0;    // above 0, at most 3600
};
NetRequest parse_net_request(std::string_view line);

// "HOST[:PORT]" or "[V6]:PORT" as --connect takes it; the port defaults to kNetDefaultPort.
Result<std::pair<std::string, int>> parse_host_port(const std::string& text);

// The interface that holds local address `address` (numeric), "" when none does.
std::string interface_with_address(const std::string& address);

}  // namespace baton::measure
