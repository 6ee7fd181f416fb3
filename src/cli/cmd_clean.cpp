#include "cli/cmd_clean.hpp"

#include <cstdio>
#include <iostream>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "clean/clean_survey.hpp"
#include "cli/cli_common.hpp"
#include "core/config.hpp"
#include "core/printable.hpp"
#include "report/clean_view.hpp"

namespace baton::cli {

CLI::App* add_clean_command(CLI::App& app, CleanArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "clean",
        "List what holds GPUs or memory for nothing (orphaned ranks, leftovers of ended runs, defunct "
        "processes) and end your own, by pid, after confirmation");
    cmd->add_flag("--dry-run", a.dry_run, "List only: signal nothing");
    cmd->add_flag("-y,--yes", a.yes, "End the listed processes without asking (for scripts)");
    cmd->add_option("--gpu", a.gpu, "Only what holds this GPU (its index, as baton top numbers them)")
        ->check(CLI::Range(0, 1023));
    add_duration_option(cmd, "--older-than", a.older_than,
                        "Only processes older than this, e.g. 10m (default: any age)", 0, 3650 * 86400.0);
    cmd->add_flag("--json", a.json, "One JSON object (docs/cli.md); ends processes only with --yes");
    add_duration_option(cmd, "--grace", a.grace, "Time between SIGTERM and SIGKILL, 0 to 10m (default 5s)", 0, 600);
    cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML (no GPU memory: leftovers of baton only)");
    cmd->add_option("--db", a.db,
                    "History database that names an ended baton's run or job (default: [history] db in the config, "
                    "else $XDG_STATE_HOME/baton/baton.db)");
    return cmd;
}

namespace {

// Without --yes on a terminal: asks; true for yes.
bool confirmed(std::size_t count, double grace) {
    std::printf("End %zu process(es): SIGTERM, then SIGKILL after %.0f s? [y/N] ", count, grace);
    std::fflush(stdout);
    std::string answer;
    std::getline(std::cin, answer);
    return answer == "y" || answer == "Y" || answer == "yes";
}

}  // namespace

int run_clean(const CleanArgs& a, const std::string& config_path) {
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    Result<SamplerOptions> so = sampler_options(*cfg, "", "", a.no_gpus);
    if (!so.ok()) return runtime_error(so.error().message);
    clean::CleanFilter filter;
    filter.caller_uid = static_cast<std::uint32_t>(geteuid());
    filter.caller_pid = static_cast<std::uint32_t>(getpid());
    if (a.gpu >= 0) filter.gpu = static_cast<unsigned>(a.gpu);
    filter.older_than_seconds = a.older_than;
    Result<std::string> db = history_path(a.db, config_path);
    const clean::CleanSurvey survey = survey_leftovers(*so, filter, db.ok() ? *db : "");
    const std::vector<clean::EndTarget>& targets = survey.targets;
    const bool act = !targets.empty() && !a.dry_run && (a.yes || !a.json);

    if (!a.json) {
        if (survey.leftovers.empty()) {
            std::printf(
                "nothing to clean: no orphaned GPU process, no leftover of an ended baton, no defunct process\n");
            return kExitOk;
        }
        std::fputs(printable_text(report::leftovers_table(survey.leftovers)).c_str(), stdout);
        if (survey.snapshot.gpu_state != GpuState::ok && !a.no_gpus)
            std::printf("(GPU memory unknown: %s)\n", escaped_line(survey.snapshot.gpu_status).c_str());
        if (targets.empty()) {
            std::printf("nothing baton clean may end\n");
            return kExitOk;
        }
        if (a.dry_run) {
            std::printf("would end %zu process(es) (--dry-run: nothing signalled)\n", targets.size());
            return kExitOk;
        }
        if (!a.yes && !isatty(STDIN_FILENO))
            return usage_error(
                fmt::format("clean: {} process(es) to end: pass --yes to end them without asking, "
                            "or --dry-run to list only",
                            targets.size()));
        if (!a.yes && !confirmed(targets.size(), a.grace)) {
            std::printf("nothing ended\n");
            return kExitFailure;
        }
    }
    const std::vector<clean::EndResult> ended =
        act ? clean::end_processes(targets, a.grace) : std::vector<clean::EndResult>{};
    const clean::EndTally tally = tally_ends(ended);
    if (a.json) {
        if (!write_stdout(report::clean_json(survey.leftovers, ended, !act, tally))) return kExitFailure;
    } else {
        std::fputs(report::end_lines(ended, a.grace, tally).c_str(), stdout);
    }
    return tally.all_done ? kExitOk : kExitFailure;
}

}  // namespace baton::cli
