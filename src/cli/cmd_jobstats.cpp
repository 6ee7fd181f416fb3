#include "cli/cmd_jobstats.hpp"

#include <cmath>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "cli/cli_common.hpp"
#include "core/config.hpp"
#include "core/listen_address.hpp"
#include "core/printable.hpp"
#include "core/units.hpp"
#include "diagnose/job_usage.hpp"
#include "serve/auth.hpp"
#include "serve/http_connection.hpp"
#include "formats/job_usage_json.hpp"

namespace baton::cli {

namespace {

using diagnose::GpuUse;
using diagnose::JobUse;
using diagnose::NodeUse;

std::string percent_of(double part, double whole) {
    return whole > 0 ? fmt::format("{:.0f} %", 100.0 * part / whole) : "-";
}

std::string hours(double seconds) {
    if (seconds < 120) return fmt::format("{:.0f} s", seconds);
    if (seconds < 3600) return fmt::format("{:.0f} min", seconds / 60);
    return fmt::format("{:.1f} h", seconds / 3600);
}

// {"a", "b"} -> "a, b" (not fmt::join: its range formatting needs fmt's compiled library, which the
// header-only build lacks under clang's sanitizer build).
std::string joined(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
    return out;
}

// The report for people: the job, each node's cores and memory, each GPU, the findings, the notes.
std::string text_report(const JobUse& j, const std::vector<std::string>& notes) {
    std::string out = j.label;
    if (!j.name.empty()) out += " \"" + printable(j.name) + "\"";
    std::vector<std::string> who;
    if (!j.user.empty()) who.push_back("user " + printable(j.user));
    if (!j.account.empty()) who.push_back("account " + printable(j.account));
    if (!j.partition.empty()) who.push_back("partition " + printable(j.partition));
    if (!who.empty()) out += " (" + joined(who) + ")";
    const double runtime = j.runtime_seconds();
    out += fmt::format(": {}, ran {}", j.ended ? "ended" : "running", hours(runtime));
    if (j.time_limit_seconds) out += " of a " + hours(*j.time_limit_seconds) + " limit";
    out += "\n";
    for (const NodeUse& n : j.nodes) {
        const double seconds = std::max(1.0, runtime);
        const double cores_used = n.cpu_seconds / seconds;
        out += fmt::format("{}: CPU {:.1f} cores on average", printable(n.host), cores_used);
        if (n.cpus) out += fmt::format(" of {} allocated ({})", *n.cpus, percent_of(cores_used, *n.cpus));
        out += fmt::format(", memory peak {}", format_size(n.memory_peak_bytes));
        if (n.memory_allocated_bytes)
            out += fmt::format(
                " of {} allocated ({})", format_gib(static_cast<double>(*n.memory_allocated_bytes)),
                percent_of(static_cast<double>(n.memory_peak_bytes), static_cast<double>(*n.memory_allocated_bytes)));
        out += "\n";
        for (const GpuUse& g : n.gpus) {
            out += fmt::format("  GPU {}{}: ", g.index, g.allocated ? " (allocated)" : "");
            out += g.utilization_percent ? fmt::format("utilisation {:.0f} %", *g.utilization_percent)
                                         : std::string("utilisation not read");
            if (g.sm_activity_percent) out += fmt::format(", SM activity {:.0f} %", *g.sm_activity_percent);
            out += fmt::format(", memory peak {}", format_size(g.memory_peak_bytes));
            if (g.memory_total_bytes)
                out += fmt::format(
                    " of {} ({})", format_gib(static_cast<double>(g.memory_total_bytes), 0),
                    percent_of(static_cast<double>(g.memory_peak_bytes), static_cast<double>(g.memory_total_bytes)));
            out += "\n";
        }
    }
    if (!j.findings.empty()) {
        out += "Findings while it ran:\n";
        for (const diagnose::JobFindingSeen& f : j.findings)
            out += fmt::format("  {} ({}): {}\n", f.rule, diagnose::severity_name(f.severity), printable(f.summary));
    }
    out += notes.empty() ? "Notes: none: it used what it asked for.\n" : "Notes:\n";
    for (const std::string& n : notes) out += "  - " + n + "\n";
    return out;
}

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at <= s.size()) {
        const std::size_t comma = std::min(s.find(',', at), s.size());
        if (comma > at) out.push_back(s.substr(at, comma - at));
        at = comma + 1;
    }
    return out;
}

// The job's path on an agent: its label or id, with the characters a URL path cannot hold escaped.
std::string job_path(const std::string& job) {
    std::string out = "/api/v1/jobs/";
    for (unsigned char c : job) {
        if (std::isalnum(c) || c == ':' || c == '/' || c == '-' || c == '_' || c == '.')
            out.push_back(static_cast<char>(c));
        else
            out += fmt::format("%{:02X}", c);
    }
    return out;
}

}  // namespace

CLI::App* add_jobstats_command(CLI::App& app, JobstatsArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "jobstats",
        "How well a job used the GPUs, cores, memory and time it was given, from its nodes' agents, with what to "
        "request next time");
    cmd->add_option("job", a.job, "The job: its Slurm id (1234), or its label (slurm:1234, pod:NAMESPACE/NAME)")
        ->required();
    cmd->add_option("--agent", a.agents,
                    "http://HOST:PORT of an agent (baton serve) to ask; repeat for each node (default: this node's)");
    cmd->add_option("--nodes", a.nodes,
                    "The job's nodes, comma-separated (as `scontrol show hostnames` lists them): each one's agent "
                    "on --port");
    cmd->add_option("--port", a.port, "The agents' port with --nodes (default: [serve] listen's)")
        ->check(CLI::Range(1, 65535));
    cmd->add_option("--token-file", a.token_file, "File with the agents' bearer token (default: [serve] token_file)");
    add_duration_option(cmd, "--timeout", a.timeout_seconds, "How long to wait for each agent (default 10s)", 0.1,
                        3600);
    auto* json = cmd->add_flag("--json", a.json, "baton's JSON (docs/fleet.md#jobstats)");
    auto* jobstats = cmd->add_flag("--jobstats", a.jobstats, "Princeton jobstats' summary JSON");
    auto* js1 = cmd->add_flag("--js1", a.js1, "The summary as jobstats' JS1 AdminComment (base64 of gzipped JSON)");
    json->excludes(jobstats)->excludes(js1);
    jobstats->excludes(js1);
    return cmd;
}

namespace {

// The agents to ask: --agent's, each of --nodes on --port, else this node's (on loopback when it
// listens on every interface). An error (usage) for an address that is not http://HOST:PORT.
Result<std::vector<std::string>> agent_urls(const JobstatsArgs& a, const ListenAddress& listen) {
    const int port = a.port ? a.port : listen.port;
    std::vector<std::string> agents = a.agents;
    if (!a.nodes.empty()) {
        for (const std::string& node : split_commas(a.nodes))
            agents.push_back("http://" + (node.find(':') != std::string::npos ? "[" + node + "]" : node) + ":" +
                             std::to_string(port));
        if (agents.empty()) return Error{"jobstats: --nodes names no node", ErrorCode::invalid_argument};
    }
    for (const std::string& agent : agents)
        if (agent.rfind("http://", 0) != 0 || agent.size() > 1000)
            return Error{"jobstats: --agent '" + printable(std::string_view(agent).substr(0, 100)) +
                             "': expected http://HOST:PORT",
                         ErrorCode::invalid_argument};
    if (agents.empty()) {
        std::string host = listen.host;
        if (host == "0.0.0.0") host = "127.0.0.1";
        if (host == "::") host = "::1";
        agents.push_back("http://" + (listen.ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port));
    }
    return agents;
}

struct Answers {
    std::vector<JobUse> parts;         // each node that knew the job
    std::vector<std::string> missing;  // the agents that did not say
    bool any_answered = false;         // some agent said "not here" (404), rather than nothing at all
};

// Asks each agent for the job; what goes wrong with one is said on stderr, and the rest go on.
Answers ask_agents(const std::vector<std::string>& agents, const std::string& job, const std::string& token,
                   double timeout_seconds) {
    Answers out;
    for (const std::string& agent : agents) {
        std::string base = agent;
        while (!base.empty() && base.back() == '/') base.pop_back();
        Result<serve::HttpAnswer> answer = serve::http_get(base + job_path(job), token, timeout_seconds);
        std::string why;
        if (!answer.ok()) {
            why = answer.error().message;
        } else if (answer.value().status == 404) {
            out.any_answered = true;
        } else if (answer.value().status != 200) {
            why = agent + " answered " + std::to_string(answer.value().status) + ": " +
                  printable(std::string_view(answer.value().body).substr(0, 200));
        } else if (Result<JobUse> use = formats::read_job_use(answer.value().body); !use.ok()) {
            why = agent + ": " + use.error().message;
        } else {
            out.parts.push_back(std::move(use.value()));
            continue;
        }
        if (!why.empty()) std::fprintf(stderr, "baton jobstats: %s\n", why.c_str());
        out.missing.push_back(agent);
    }
    return out;
}

}  // namespace

int run_jobstats(const JobstatsArgs& a, const std::string& config_path) {
    if (a.job.empty() || a.job.size() > 256) return usage_error("jobstats: JOB must be 1 to 256 characters");
    if (!a.nodes.empty() && !a.agents.empty()) return usage_error("jobstats: --nodes or --agent, not both");
    Result<Config> config = load_config(config_path);
    if (!config.ok()) return error_exit(config.error());
    const Config& c = config.value();
    Result<ListenAddress> listen = parse_listen_address(c.serve.listen);
    if (!listen.ok()) return error_exit(listen.error().context("[serve] listen"));
    Result<std::vector<std::string>> agents = agent_urls(a, listen.value());
    if (!agents.ok()) return usage_error(agents.error().message);
    // (the default file may be root's alone: a user without it asks a loopback agent without it)
    const Result<std::string> token = serve::asker_token(a.token_file, c.serve.token_file);
    if (!token.ok()) return error_exit(token.error());
    Answers answers = ask_agents(agents.value(), a.job, *token, a.timeout_seconds);
    const std::string asked = joined(agents.value());
    if (answers.parts.empty() && !answers.any_answered)
        return runtime_error("jobstats: no agent answered (asked " + asked + ")");
    if (answers.parts.empty())
        return runtime_error("jobstats: no agent knows job '" + printable(a.job) + "' (asked " + asked +
                             "; an agent keeps a job for an hour after it ends)");
    if (!answers.missing.empty())
        std::fprintf(stderr, "baton jobstats: nothing on job '%s' from %s: the summary holds the other nodes\n",
                     printable(a.job).c_str(), joined(answers.missing).c_str());
    const JobUse job = diagnose::merge_nodes(std::move(answers.parts));
    const std::vector<std::string> notes = diagnose::job_use_notes(job);
    std::string out;
    if (a.json)
        out = formats::job_use_json(job, notes) + "\n";
    else if (a.jobstats)
        out = formats::jobstats_summary(job) + "\n";
    else if (a.js1)
        out = formats::js1_admin_comment(job) + "\n";
    else
        out = text_report(job, notes);
    return write_stdout(out) ? kExitOk : kExitFailure;
}

}  // namespace baton::cli
