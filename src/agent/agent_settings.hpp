// What `baton serve` runs with, decided before anything starts: the flags as typed over the
// config layers -> the HTTP side's settings (address, token, allowed hosts, exports) and the
// queue's options (socket, jobs directory, the CPUs, memory and GPUs it may hand out). The HTTP
// settings are decided again at SIGHUP; only the token file is read here, nothing starts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/listen_address.hpp"
#include "core/result.hpp"
#include "core/thresholds.hpp"
#include "queue/queue_server.hpp"
#include "sample/sampler.hpp"
#include "serve/service.hpp"

namespace baton::agent {

// The flags of `baton serve` (docs/cli.md); "" and 0 mean "from the config".
struct ServeFlags {
    std::string listen;      // "" : [serve] listen, else 127.0.0.1:22866
    double interval = 0;     // 0 : [serve] interval, else 1 s
    std::string token_file;  // "" : [serve] token_file
    bool insecure = false;
    bool no_gpus = false;
    bool dcgm_compat = false;
    bool jobstats_compat = false;
    std::string proc_root, sys_root;
    std::string db;  // "" : [history] db, else the default state path
    bool no_db = false;
    bool no_http = false;  // the queue's socket only (the agent `baton submit` starts)
    std::string socket;    // "" : $BATON_SOCKET, else /run/baton/baton.sock (root), else
                           // $XDG_RUNTIME_DIR/baton/baton.sock
};

// The settings a SIGHUP may change: everything but the listen address, the interval and the
// sampler's roots (those need a restart, which the reload message says).
struct ServeSettings {
    ListenAddress listen;
    double interval = 1;
    serve::ServiceOptions service;
    Thresholds thresholds;
};

// The settings from the config layers with the flags over them. Errors are invalid_argument,
// one line each: a bad --listen, an unreadable token file, a non-loopback address without a token.
Result<ServeSettings> serve_settings(const ServeFlags& flags, const Config& config);

// What the queue may hand out on this machine, and who runs the agent.
struct QueueMachine {
    std::map<std::string, std::string> env;  // the agent's environment: the socket's place, a Slurm allocation
    bool root = false;                       // the system agent: its socket is group [queue] socket_group's
    std::vector<unsigned> cpus;              // the CPUs this process may run on
    std::uint64_t memory_bytes = 0;          // the machine's memory
};
QueueMachine this_machine(std::map<std::string, std::string> env);

// The queue's options: its socket (a system agent's is group baton's, 0660: without that group
// only root may submit, which a note on stderr says), the jobs' directory beside the history at
// `db_path`, the CPUs and memory the agent may hand out, the GPUs (inside a Slurm allocation, the
// allocation's). An error says why the queue cannot run.
Result<queue::QueueServerOptions> queue_options(const ServeFlags& flags, const Config& config,
                                                const std::string& db_path, const SamplerOptions& sampler,
                                                const QueueMachine& machine);

}  // namespace baton::agent
