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

namespace baton::cli {

CLI::App* add_profile_command(CLI::App& app, ProfileArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "profile",
        "Judge a PyTorch profiler trace: where each millisecond of a step goes (GPU and host), the syncs with "
        "their line, the top kernels, and what to change");
    cmd->add_option("file", a.file, "The trace: Chrome-trace JSON as torch.profiler writes it, plain or gzipped")
        ->required();
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

int run_profile(const ProfileArgs& a, const std::string& config_path) {
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return error_exit(cfg.error());
    Result<profile::Trace> trace = profile::read_trace_file(a.file);
    if (!trace.ok()) return runtime_error(trace.error().message);
    const profile::Analysis analysis = profile::analyse(*trace);
    profile::ProfileRuleOptions options;
    options.min_share = a.min_share >= 0 ? a.min_share : cfg->profile.min_share;
    options.cpus = static_cast<unsigned>(allowed_cpus().size());
    const std::vector<diagnose::Finding> findings = profile::judge_profile(analysis, options);
    report::ProfileInfo info;
    info.source = a.file;
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
