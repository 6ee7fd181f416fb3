// `baton serve`: the node agent (src/agent/ over serve and queue): Prometheus /metrics, the JSON
// API, live findings, the job queue.
#pragma once

#include <string>

#include "agent/agent_settings.hpp"

namespace CLI {
class App;
}

namespace baton::cli {

// The flags bind straight to the agent's (agent/agent_settings.hpp).
using ServeArgs = agent::ServeFlags;

CLI::App* add_serve_command(CLI::App& app, ServeArgs& args);
int run_serve(const ServeArgs& args, const std::string& config_path);

}  // namespace baton::cli
