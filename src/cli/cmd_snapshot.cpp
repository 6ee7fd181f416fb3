#include "cli/cmd_snapshot.hpp"

#include <cmath>
#include <csignal>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/clock.hpp"
#include "core/config.hpp"
#include "report/snapshot_text.hpp"
#include "sample/sampler.hpp"
#include "store/snapshot_json.hpp"
#include "store/snapshot_prometheus.hpp"

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
    return cmd;
}

int run_snapshot(const SnapshotArgs& a, const std::string& config_path) {
    if (!std::isfinite(a.interval)) return usage_error("--interval: must be a finite number of seconds");
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
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
    store::SnapshotJsonEncoder json_encoder;
    store::PrometheusOptions prometheus;  // as baton serve's /metrics has them, from [serve]
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
            store::append_snapshot_prometheus(snap, prometheus, out);
            if (cfg->serve.jobstats_compat) {
                store::Exposition jobstats;
                store::append_jobstats_compat(snap, os::read_slurm_job_cgroups(snap, opts.sys_root + "/fs/cgroup"),
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
