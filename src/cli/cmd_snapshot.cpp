#include "cli/cmd_snapshot.hpp"

#include <cmath>
#include <csignal>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "cli/cli_common.hpp"
#include "core/clock.hpp"
#include "core/config.hpp"
#include "core/printable.hpp"
#include "report/snapshot_text.hpp"
#include "sample/sampler.hpp"
#include "serve/auth.hpp"
#include "serve/hosts.hpp"
#include "formats/snapshot_json.hpp"
#include "formats/snapshot_prometheus.hpp"

namespace baton::cli {

CLI::App* add_snapshot_command(CLI::App& app, SnapshotArgs& a) {
    CLI::App* cmd = app.add_subcommand("snapshot", "Print one picture of the machine: system, GPUs, processes");
    auto* json = cmd->add_flag("--json", a.json, "One JSON object per snapshot (JSON Lines with --count)");
    auto* prom = cmd->add_flag("--prometheus", a.prometheus, "Prometheus text exposition format");
    json->excludes(prom);
    cmd->add_option("--count", a.count, "Number of snapshots to take (default 1)")->check(CLI::Range(1, 100000000));
    add_duration_option(cmd, "--interval", a.interval,
                        "Time between snapshots, up to 1d; 0 = back to back (default 1s)", 0, 86400);
    cmd->add_flag("--no-processes", a.no_processes, "System and GPUs only (the cheapest snapshot)");
    cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML");
    cmd->add_option("--proc-root", a.proc_root, "Read /proc from this directory (default /proc, or config)");
    cmd->add_option("--sys-root", a.sys_root, "Read /sys from this directory (default /sys, or config)");
    // Only the text summary lists processes: with --json or --prometheus it would be ignored, so it is refused.
    cmd->add_option("--top", a.top, "Processes listed in the text summary (default 10)")
        ->check(CLI::Range(0, 100000))
        ->excludes(json)
        ->excludes(prom);
    auto* hosts =
        cmd->add_option("--hosts", a.hosts,
                        "HOST[:PORT],...: the snapshots of these hosts' agents (baton serve), all asked at once, "
                        "each said ok, stale, down or unauthorized (port default: [serve] listen's)");
    hosts->excludes(prom);
    hosts->check([](const std::string& v) { return v.empty() ? std::string("no host given") : std::string(); });
    cmd->add_option("--token-file", a.token_file, "With --hosts: the agents' bearer token (default [serve] token_file)")
        ->needs(hosts);
    add_duration_option(cmd, "--timeout", a.timeout_seconds,
                        "With --hosts: how long to wait for each host (default 2s; 0.1s to 60s)", 0.1, 60)
        ->needs(hosts);
    return cmd;
}

namespace {

// --hosts: each host's agent asked at once; JSON {"hosts": [...]} or, for people, each host's summary
// under a line that says how it answered. Exit 1 when no host answered.
int run_hosts_snapshot(const SnapshotArgs& a, const Config& c) {
    if (a.count != 1) return usage_error("--hosts takes one snapshot of each host (no --count)");
    Result<std::vector<serve::HostAddress>> hosts = serve::parse_hosts(a.hosts, agent_port(c));
    if (!hosts.ok()) return usage_error(hosts.error().message);
    const Result<std::string> token = serve::asker_token(a.token_file, c.serve.token_file);
    if (!token.ok()) return runtime_error(token.error().message);
    const std::vector<serve::HostSnapshot> got = serve::fetch_snapshots(*hosts, *token, a.timeout_seconds);
    std::string out;
    bool any = false;
    if (a.json) {
        out = "{\"hosts\":[";
        for (std::size_t i = 0; i < got.size(); ++i) {
            const serve::HostSnapshot& h = got[i];
            nlohmann::json head = {{"host", h.host.name},
                                   {"url", h.host.url},
                                   {"status", serve::host_state_name(h.state)},
                                   {"seconds", std::round(h.seconds * 1000) / 1000}};
            if (!h.error.empty()) head["error"] = h.error;
            std::string line = head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            line.pop_back();  // the snapshot, as the agent wrote it, goes in without being parsed and made again
            line += ",\"snapshot\":" + (h.snapshot.empty() ? std::string("null") : h.snapshot) + "}";
            out += (i ? "," : "") + line;
            any |= !h.snapshot.empty();
        }
        out += "]}\n";
    } else {
        report::TextOptions text;
        text.top_processes = static_cast<std::size_t>(a.top);
        for (const serve::HostSnapshot& h : got) {
            out += "== " + printable(h.host.name) + " (" + h.host.url + "): " + serve::host_state_name(h.state);
            if (!h.error.empty()) out += ", " + printable(h.error);
            out += "\n";
            if (!h.parsed) continue;
            any = true;
            report::append_snapshot_text(*h.parsed, text, out);
        }
    }
    if (!write_stdout(out)) return kExitOk;
    return any ? kExitOk : runtime_error("--hosts: no host answered");
}

}  // namespace

int run_snapshot(const SnapshotArgs& a, const std::string& config_path) {
    if (!std::isfinite(a.interval)) return usage_error("--interval: must be a finite number of seconds");
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    if (!a.hosts.empty()) return run_hosts_snapshot(a, *cfg);
    Result<SamplerOptions> options = sampler_options(*cfg, a.proc_root, a.sys_root, a.no_gpus);
    if (!options.ok()) return runtime_error(options.error().message);
    SamplerOptions opts = *options;
    opts.processes = !a.no_processes;
    // With --interval 0 the priming read is also back to back: a caller asking for maximum
    // rate wants no sleeps (rates are then over a very short first interval).
    opts.priming_seconds = std::min(0.1, a.interval);

    std::signal(SIGPIPE, SIG_IGN);  // a closed pipe becomes a write error we handle
    Sampler sampler(opts);
    Snapshot snap;
    std::string out;
    formats::SnapshotJsonEncoder json_encoder;
    formats::PrometheusOptions prometheus;  // as baton serve's /metrics has them, from [serve]
    prometheus.process_series = cfg->serve.process_series;
    prometheus.dcgm_compat = cfg->serve.dcgm_compat;
    if (const char* node = std::getenv("NODE_NAME"); node && *node) prometheus.dcgm_hostname = node;
    report::TextOptions text;
    text.top_processes = static_cast<std::size_t>(a.top);
    SampleSchedule schedule(a.interval);
    for (int i = 0; i < a.count; ++i) {
        sleep_seconds(schedule.next() - monotonic_seconds());
        sampler.take(snap);
        // The first snapshot waits (2 s at most) for the job names asked of Slurm; later ones have them.
        if (i == 0) sampler.settle_jobs(snap, 2.0);
        schedule.taken(monotonic_seconds());
        out.clear();
        if (a.json) {
            json_encoder.append(snap, out);
            out.push_back('\n');
        } else if (a.prometheus) {
            formats::append_snapshot_prometheus(snap, prometheus, out);
            if (cfg->serve.jobstats_compat) {
                formats::Exposition jobstats;
                formats::append_jobstats_compat(snap, os::read_slurm_job_cgroups(snap, opts.sys_root + "/fs/cgroup"),
                                                jobstats);
                jobstats.write(out);
            }
        } else {
            if (i > 0) out.push_back('\n');
            report::append_snapshot_text(snap, text, out);
        }
        if (!write_stdout(out)) return kExitOk;  // reader closed the pipe: stop quietly
    }
    return kExitOk;
}

}  // namespace baton::cli
