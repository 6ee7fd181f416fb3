#include "cli/cmd_report.hpp"

#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/printable.hpp"
#include "report/run_report.hpp"
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

int run_report(const ReportArgs& a, const std::string& config_path) {
    Result<store::History> h = open_history(a.db, config_path);
    if (!h.ok()) return runtime_error(h.error().message);
    Result<std::int64_t> id = store::parse_run_id(a.run);
    if (!id.ok()) return runtime_error(id.error().message);
    if (a.markdown) {
        Result<std::string> text = report::recorded_run_report(*h, *id, true);
        if (!text.ok()) return runtime_error(text.error().message);
        write_stdout(*text);
        return kExitOk;
    }
    const std::string path = a.html.empty() ? "baton-run-" + std::to_string(*id) + ".html" : a.html;
    if (Status w = report::write_html_report(*h, *id, path); !w.ok()) return runtime_error(w.error().message);
    if (path != "-")
        std::fprintf(stderr, "baton report: run %lld written to %s\n", static_cast<long long>(*id),
                     escaped_line(path).c_str());
    return kExitOk;
}

}  // namespace baton::cli
