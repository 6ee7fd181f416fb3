#include "cli/cmd_report.hpp"

#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "cli/cli_common.hpp"
#include "core/printable.hpp"
#include "report/run_report.hpp"
#include "run/run_command.hpp"
#include "store/history.hpp"

namespace baton::cli {

CLI::App* add_report_command(CLI::App& app, ReportArgs& a) {
    CLI::App* cmd =
        app.add_subcommand("report", "A recorded run as one self-contained HTML page with charts, or as Markdown");
    cmd->add_option("run", a.run, "Run id (baton runs lists them)")->required();
    CLI::Option* html =
        cmd->add_option("--html", a.html, "Write the HTML page to FILE ('-': stdout; default baton-run-ID.html)");
    cmd->add_flag("--markdown", a.markdown, "Print Markdown to stdout instead")->excludes(html);
    cmd->add_option("--db", a.db,
                    "History database (default: [history] db in the config, else $XDG_STATE_HOME/baton/baton.db)");
    return cmd;
}

namespace {

// The run's profiler window for the report's Step section (none when it has none, or when an older
// history cannot say).
std::optional<report::StepSection> step_of(store::History& h, std::int64_t run) {
    Result<std::vector<store::RecordedProfile>> windows = h.profiles(run);
    return windows.ok() ? report::step_section(*windows) : std::nullopt;
}

}  // namespace

Status write_html_report(store::History& h, std::int64_t run, const std::string& path) {
    Result<store::StoredRun> d = h.load_run(run);
    if (!d.ok()) return d.error();
    const std::optional<report::StepSection> step = step_of(h, run);
    return write_file(path, report::run_report_html(*d, step ? &*step : nullptr));
}

std::string write_run_outputs(const run::RunStats& stats, const std::string& db_path, const std::string& report,
                              const std::string& summary_json, std::string_view what) {
    std::string out;
    if (!report.empty()) {
        // Read back from the history, so it shows exactly what `baton report` would.
        Status w = make_error(fmt::format("the {} was not recorded, so there is no report", what));
        if (stats.recording.run_id) {
            Result<store::History> h = store::History::open(db_path, store::HistoryAccess::read);
            w = h.ok() ? write_html_report(*h, stats.recording.run_id, report) : Status(h.error());
        }
        out += w.ok() ? "  report: " + report + "\n" : "  report: not written: " + w.error().message + "\n";
    }
    if (!summary_json.empty()) {
        if (Status w = write_file(summary_json, run::run_summary_json(stats)); !w.ok())
            out += "  summary JSON: not written: " + w.error().message + "\n";
    }
    return out;
}

int run_report(const ReportArgs& a, const std::string& config_path) {
    Result<store::History> h = open_history(a.db, config_path);
    if (!h.ok()) return runtime_error(h.error().message);
    Result<std::int64_t> id = store::parse_run_id(a.run);
    if (!id.ok()) return runtime_error(id.error().message);
    if (a.markdown) {
        Result<store::StoredRun> d = h->load_run(*id);
        if (!d.ok()) return runtime_error(d.error().message);
        const std::optional<report::StepSection> step = step_of(*h, *id);
        write_stdout(report::run_report_markdown(*d, step ? &*step : nullptr));
        return kExitOk;
    }
    const std::string path = a.html.empty() ? "baton-run-" + std::to_string(*id) + ".html" : a.html;
    if (Status w = write_html_report(*h, *id, path); !w.ok()) return runtime_error(w.error().message);
    if (path != "-")
        std::fprintf(stderr, "baton report: run %lld written to %s\n", static_cast<long long>(*id),
                     escaped_line(path).c_str());
    return kExitOk;
}

}  // namespace baton::cli
