#include "cli/cmd_profile.hpp"

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/allowed_cpus.hpp"
#include "core/config.hpp"
#include "profile/profile_rules.hpp"
#include "profile/step_breakdown.hpp"
#include "profile/trace_events.hpp"
#include "report/findings_view.hpp"
#include "report/profile_view.hpp"
#include "store/history.hpp"
#include "store/history_runs.hpp"

namespace baton::cli {

CLI::App* add_profile_command(CLI::App& app, ProfileArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "profile",
        "Judge a PyTorch profiler trace: where each millisecond of a step goes (GPU and host), the syncs with "
        "their line, the top kernels, and what to change");
    cmd->add_option("file", a.file,
                    "The trace: Chrome-trace JSON as torch.profiler writes it, plain or gzipped; or 'show' and a run "
                    "id: the window baton run --profile kept with that run")
        ->required();
    cmd->add_option("run", a.run, "With show: the run's id (baton runs lists them)");
    cmd->add_option("--db", a.db,
                    "History database, for show (default: [history] db in the config, else "
                    "$XDG_STATE_HOME/baton/baton.db)");
    cmd->add_flag("--json", a.json, "One JSON object (docs/profile.md, 'JSON output')");
    cmd->add_option("--top", a.top, "Rows of the kernel and operator tables (default 10)")->check(CLI::Range(1, 1000));
    cmd->add_option("--min-share", a.min_share,
                    "Raise a finding only when it costs this share of the step or more, 0 to 1 (default: [profile] "
                    "min_share, 0.05)")
        ->check(CLI::Range(0.0, 1.0));
    cmd->footer(
        "Exit status: 0 when nothing is above info, 1 for a warning or a trace that cannot be read, 2 for bad usage.");
    return cmd;
}

namespace {

// The trace of `baton profile show RUN`: the run's last window, from the history.
Result<profile::Trace> run_trace(const ProfileArgs& a, const std::string& config_path, std::string& source) {
    Result<NamedRun> run = open_named_run(a.run, a.db, config_path);
    if (!run.ok()) return run.error();
    Result<std::vector<store::RecordedProfile>> windows = run->history.run_reads().profiles(run->record.id);
    if (!windows.ok()) return windows.error();
    if (windows->empty())
        return make_error(ErrorCode::not_found,
                          run->what + " has no profile window: record one with baton run --profile");
    const store::RecordedProfile& w = windows->back();
    source = run->what + ", rank " + std::to_string(w.rank) + "'s window";
    Result<profile::Trace> t = profile::parse_trace_bytes(w.trace_gz);
    if (!t.ok()) return make_error("the window kept with " + run->what + ": " + t.error().message);
    return t;
}

}  // namespace

int run_profile(const ProfileArgs& a, const std::string& config_path) {
    const bool show = a.file == "show";
    if (show && a.run.empty()) return usage_error("profile show: name a run's id (baton runs lists them)");
    if (!show && !a.run.empty())
        return usage_error("profile: one trace file at a time (or: baton profile show RUN; a file named show: ./show)");
    if (!show && !a.db.empty()) return usage_error("profile: --db goes with show RUN");
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return error_exit(cfg.error());
    std::string source = a.file;
    Result<profile::Trace> trace = show ? run_trace(a, config_path, source) : profile::read_trace_file(a.file);
    if (!trace.ok()) return error_exit(trace.error());
    const profile::Analysis analysis = profile::analyse(*trace);
    profile::ProfileRuleOptions options;
    options.min_share = a.min_share >= 0 ? a.min_share : cfg->profile.min_share;
    options.cpus = static_cast<unsigned>(allowed_cpus().size());
    options.data_wait_share = cfg->thresholds.data_wait_percent / 100;
    options.data_wait_warning_share = cfg->thresholds.data_wait_warning_percent / 100;
    const std::vector<diagnose::Finding> findings = profile::judge_profile(analysis, options);
    report::ProfileInfo info;
    info.source = source;
    info.top = a.top;
    std::string out;
    if (a.json) {
        report::append_profile_json(info, analysis, findings, out);
        out += "\n";
    } else {
        report::append_profile_text(info, analysis, findings, out);
    }
    if (!write_stdout(out)) return kExitFailure;
    return report::diagnosis_exit_status(findings) > 0 ? kExitFailure : kExitOk;
}

}  // namespace baton::cli
