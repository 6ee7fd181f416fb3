#include "cli/cmd_runs.hpp"

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/clock.hpp"
#include "report/run_export.hpp"
#include "report/runs_view.hpp"
#include "store/history.hpp"
#include "store/history_runs.hpp"

namespace baton::cli {

CLI::App* add_runs_command(CLI::App& app, RunsArgs& a) {
    CLI::App* cmd = app.add_subcommand("runs", "The runs recorded by baton run: list (default), show, export, prune");
    cmd->add_option("--db", a.db,
                    "History database (default: [history] db in the config, else $XDG_STATE_HOME/baton/baton.db)");
    cmd->add_flag("--json", a.json,
                  "JSON: the list as JSON Lines (one object per run), show as one object, export as jsonl, prune's "
                  "result as one object");
    cmd->require_subcommand(0, 1);
    cmd->fallthrough();  // --db may follow the action
    a.show = cmd->add_subcommand("show", "One run: its record, findings and summary");
    a.show->add_option("run", a.run, "Run id")->required();
    a.export_ = cmd->add_subcommand("export", "One run's samples (or the hook's steps), to stdout, in base units");
    a.export_->add_option("run", a.run, "Run id")->required();
    a.export_->add_option("--format", a.format, "jsonl or csv (default jsonl)")->check(CLI::IsMember({"jsonl", "csv"}));
    a.export_->add_flag("--steps", a.steps, "The training steps the Python hook reported, instead of the samples");
    a.prune = cmd->add_subcommand("prune",
                                  "Delete finished and interrupted runs older than a duration, and give the "
                                  "space back");
    a.prune->add_flag("--dry-run", a.dry_run, "List the runs that would be deleted; delete nothing");
    add_duration_option(a.prune, "--older-than", a.older_than, "Age: 30d, 12h, 90min, 3600s", 0, 1e6 * 86400)
        ->required();
    return cmd;
}

namespace {

// `runs prune`: what goes (or would, with --dry-run), and the space given back.
int prune(store::History& h, const RunsArgs& a) {
    const std::int64_t before = unix_millis() - static_cast<std::int64_t>(a.older_than * 1000);
    Result<std::vector<store::RunRecord>> going = h.run_reads().prunable(before);
    if (!going.ok()) return runtime_error(going.error().message);
    std::int64_t freed = 0;
    std::string note;  // why the space was not given back
    if (!a.dry_run) {
        Result<int> n = h.run_reads().prune(before);
        if (!n.ok()) return runtime_error(n.error().message);
        if (*n > 0) {
            Result<std::int64_t> v = h.vacuum();
            if (v.ok())
                freed = *v;
            else
                note = v.error().message;
        }
    }
    const report::PruneOutcome outcome{*going, a.dry_run, freed, note};
    write_stdout(a.json ? report::prune_json(outcome) : report::prune_text(outcome));
    return kExitOk;
}

}  // namespace

int run_runs(const RunsArgs& a, const std::string& config_path) {
    const bool exporting = a.export_->parsed();
    if (exporting && a.json && a.format != "jsonl")
        return usage_error("runs export: --json is --format jsonl; drop one of them");
    // Prune deletes; everything else only reads (a read-only history, or someone else's, is fine).
    Result<store::History> h =
        open_history(a.db, config_path, a.prune->parsed() ? store::HistoryAccess::manage : store::HistoryAccess::read);
    if (!h.ok()) return runtime_error(h.error().message);
    if (a.prune->parsed()) return prune(*h, a);
    if (!a.show->parsed() && !exporting) {
        Result<std::vector<store::RunRecord>> runs = h->run_reads().runs();
        if (!runs.ok()) return runtime_error(runs.error().message);
        write_stdout(a.json ? report::runs_jsonl(*runs) : report::runs_table(*runs));
        return kExitOk;
    }
    Result<std::int64_t> id = store::parse_run_id(a.run);
    if (!id.ok()) return runtime_error(id.error().message);
    Result<store::RunRecord> it = h->run_reads().run(*id);
    if (!it.ok()) return runtime_error(it.error().message);
    Result<std::vector<store::RecordedFinding>> findings = h->run_reads().findings(*id);
    if (!findings.ok()) return runtime_error(findings.error().message);
    if (exporting) {
        const std::string format = a.json ? "jsonl" : a.format;
        if (a.steps) {
            Result<std::vector<store::StepEvent>> steps = h->run_reads().steps(*id);
            if (!steps.ok()) return runtime_error(steps.error().message);
            write_stdout(report::export_steps(*steps, format));
            return kExitOk;
        }
        Result<std::vector<store::RunSample>> samples = h->run_reads().samples(*id);
        if (!samples.ok()) return runtime_error(samples.error().message);
        write_stdout(report::export_samples(*samples, format));
        return kExitOk;
    }
    Result<std::vector<store::RecordedHang>> hangs = h->run_reads().hangs(*id);
    if (!hangs.ok()) return runtime_error(hangs.error().message);
    if (a.json) {
        write_stdout(report::run_json(*it, *findings, *hangs));
        return kExitOk;
    }
    write_stdout(report::run_text(*it, *findings, *hangs));
    return kExitOk;
}

}  // namespace baton::cli
