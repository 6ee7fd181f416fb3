#include "cli/cmd_diagnose.hpp"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/clock.hpp"
#include "core/config.hpp"
#include "core/printable.hpp"
#include "diagnose/rules.hpp"
#include "report/findings_view.hpp"
#include "sample/sampler.hpp"
#include "formats/snapshot_json_read.hpp"

namespace baton::cli {

namespace {

int cannot_judge(const std::string& message) {
    std::fprintf(stderr, "baton: %s\n", escaped_line(message).c_str());
    return kExitCannotJudge;
}

// A recorded stream from a file, or stdin for "-".
Result<diagnose::Window> read_replay(const std::string& path) {
    if (path == "-") return formats::read_snapshot_stream(std::cin, path);
    std::ifstream file(path, std::ios::binary);
    if (!file) return make_error("cannot read " + path);
    return formats::read_snapshot_stream(file, path);
}

// `count` snapshots `interval` apart, live.
diagnose::Window sample_live(const SamplerOptions& options, double interval, std::size_t count) {
    SamplerOptions opts = options;
    opts.priming_seconds = std::min(0.5, interval);
    Sampler sampler(opts);
    SampleSchedule schedule(interval);
    diagnose::Window w;
    for (std::size_t i = 0; i < count; ++i) {
        sleep_seconds(schedule.next() - monotonic_seconds());
        Snapshot s;
        sampler.take(s);
        schedule.taken(monotonic_seconds());
        w.push_back(std::move(s));
    }
    return w;
}

}  // namespace

CLI::App* add_diagnose_command(CLI::App& app, DiagnoseArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "diagnose", "Judge the machine: findings with evidence and fixes (exit 0 ok, 1 warning, 2 critical)");
    CLI::Option* duration = add_duration_option(
        cmd, "--duration", a.duration, "How long to sample live: 30s, 2m, 1h (default 30s)", 0.1, 30 * 86400.0);
    CLI::Option* interval = add_duration_option(cmd, "--interval", a.interval,
                                                "Time between live snapshots, 0.1 s to 60 s (default 1s)", 0.1, 60);
    cmd->add_flag("--json", a.json, "Findings as one JSON object");
    CLI::Option* replay = cmd->add_option(
        "--replay", a.replay, "Judge a recorded stream instead (JSON Lines of baton snapshot --json; - for stdin)");
    CLI::Option* no_gpus = cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML (live)");
    CLI::Option* proc = cmd->add_option("--proc-root", a.proc_root, "Read /proc from this directory (live)");
    CLI::Option* sys = cmd->add_option("--sys-root", a.sys_root, "Read /sys from this directory (live)");
    // The live options mean nothing for a recording: given with --replay they are an error, not ignored.
    for (CLI::Option* live : {duration, interval, no_gpus, proc, sys}) replay->excludes(live);
    return cmd;
}

int run_diagnose(const DiagnoseArgs& a, const std::string& config_path) {
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return cannot_judge(cfg.error().message);
    const Thresholds& t = cfg->thresholds;
    std::signal(SIGPIPE, SIG_IGN);

    report::DiagnosisInfo info;  // its source here, the rest from the window below
    diagnose::Window w;
    if (!a.replay.empty()) {
        Result<diagnose::Window> r = read_replay(a.replay);
        if (!r.ok()) return cannot_judge(r.error().message);
        w = std::move(*r);
        if (w.empty()) return cannot_judge(a.replay + ": no snapshots to judge");
        info.source = a.replay == "-" ? "stdin" : a.replay;
    } else {
        const std::optional<double> duration = a.duration;
        Result<SamplerOptions> options = sampler_options(*cfg, a.proc_root, a.sys_root, a.no_gpus);
        if (!options.ok()) return cannot_judge(options.error().message);
        const auto count = static_cast<std::size_t>(std::floor(*duration / a.interval)) + 1;
        if (*duration < t.sustained_share * t.window_seconds)
            std::fprintf(
                stderr,
                "baton: note: rules that need a sustained breach look at %.0f s or more; this run lasts %.0f s\n",
                t.sustained_share * t.window_seconds, *duration);
        if (isatty(STDERR_FILENO))
            std::fprintf(stderr, "baton: sampling for %.0f s (%zu snapshots)...\n", *duration, count);
        w = sample_live(*options, a.interval, count);
        info.source = "live";
    }
    info = report::diagnosis_info(w, info.source);

    const std::vector<diagnose::Finding> findings = diagnose::diagnose(w, t);
    const std::vector<diagnose::IndicatorSummary> indicators = diagnose::summarize_indicators(w, t);
    std::string out;
    if (a.json) {
        report::append_findings_json(info, findings, indicators, out);
        out.push_back('\n');
    } else {
        report::append_findings_text(info, findings, indicators, out);
    }
    write_stdout(out);
    return report::diagnosis_exit_status(findings);
}

}  // namespace baton::cli
