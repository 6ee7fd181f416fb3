// The client's end of the queue: which agent to talk to, starting the user's own agent when none
// answers (baton submit), and one request with its answer.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "queue/protocol.hpp"

namespace baton::queue {

// Where this user's agent listens when started with no --socket: $BATON_SOCKET, else root's
// /run/baton/baton.sock (for root), else $XDG_RUNTIME_DIR/baton/baton.sock; an error when none applies.
Result<std::string> own_socket_path(const std::map<std::string, std::string>& env);

// A connection to the agent: $BATON_SOCKET when set, else the system agent's socket, else the
// user's. Errors: unavailable when no agent answers at any of them (the message names every place
// tried); permission_denied for a socket of another user's; failed for the rest.
Result<int> connect_agent(const std::map<std::string, std::string>& env);

// Starts `program serve --no-http` for this user in the background (its own session, its output in
// `log_path`) and waits up to 10 s for it to answer. Returns the connection; `pid` gets its pid.
Result<int> start_agent(const std::string& program, const std::vector<std::string>& extra_args,
                        const std::map<std::string, std::string>& env, const std::string& log_path, int& pid);

// connect_agent, and when no agent answers (unavailable), this user's own started with
// start_agent at own_socket_path(env) (`extra_args` after its --socket), as `baton submit` does:
// the connection, and what was started (the log's directory made on a first use). `log_path` is
// asked only when an agent is started: finding it may read the config, which a client talking to
// a running agent does not need (a thousand submits read it a thousand times otherwise).
struct StartedAgent {
    int pid = 0;
    std::string socket, log;
};
struct AgentConnection {
    int fd = -1;
    std::optional<StartedAgent> started;
};
Result<AgentConnection> connect_or_start_agent(const std::map<std::string, std::string>& env,
                                               const std::string& program, const std::vector<std::string>& extra_args,
                                               const std::function<std::string()>& log_path);

struct Reply {
    std::string line;   // the answer's JSON (without the newline)
    std::string bytes;  // what followed it (logs)
};

// Sends one request on `fd` and reads the answer; `timeout_seconds` < 0 waits without end (wait).
// Errors: disconnected when the agent went away (it may be restarting), timed_out, failed.
Result<Reply> call(int fd, const Request& r, double timeout_seconds = 30);

// An answer read: its JSON when {"ok": true} (what followed the line under "data"), else the
// refusal as an Error with the code the agent gave (failed when none, as an older agent's).
Result<nlohmann::json> parse_answer(const Reply& reply);

// One request to the agent found by connect_agent, and its answer ({"ok": true, ...}; what a logs
// answer carries after its line, under "data"). Errors: connect_agent's (unavailable: the message
// says how to start one) and call's; a refusal with the code the agent gave it (failed when it
// gave none, as an older agent).
Result<nlohmann::json> ask_agent(const std::map<std::string, std::string>& env, const Request& r,
                                 double timeout_seconds = 30);

}  // namespace baton::queue
