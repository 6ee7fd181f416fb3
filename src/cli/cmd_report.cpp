#include "cli/cmd_report.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
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

namespace {

Result<RunReportData> load(const std::string& db, std::int64_t run) {
    Result<History> h = History::open(db, /*create=*/false);
    if (!h.ok()) return h.error();
    Result<std::vector<RunRecord>> runs = h->runs();
    if (!runs.ok()) return runs.error();
    RunReportData d;
    bool found = false;
    for (RunRecord& r : *runs)
        if (r.id == run) {
            d.run = std::move(r);
            found = true;
        }
    if (!found) return make_error("no run " + std::to_string(run) + " in the history");
    Result<std::vector<RunSample>> samples = h->samples(run);
    if (!samples.ok()) return samples.error();
    Result<std::vector<RecordedFinding>> findings = h->findings(run);
    if (!findings.ok()) return findings.error();
    Result<std::vector<StepEvent>> steps = h->steps(run);
    if (!steps.ok()) return steps.error();
    d.samples = std::move(*samples);
    d.findings = std::move(*findings);
    d.steps = std::move(*steps);
    return d;
}

// Writes through a temporary file and a rename, so an existing report is never left half-written.
std::string write_file(const std::string& path, const std::string& text) {
    if (path == "-") return write_stdout(text) ? "" : "cannot write to stdout";
    const std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) return "cannot write " + path + ": " + std::strerror(errno);
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    const int err = errno;
    if (std::fclose(f) != 0 || !ok) {
        std::remove(tmp.c_str());
        return "cannot write " + path + ": " + std::strerror(ok ? errno : err);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        std::remove(tmp.c_str());
        return "cannot write " + path + ": " + std::strerror(e);
    }
    return "";
}

}  // namespace

std::string write_html_report(const std::string& db, std::int64_t run, const std::string& path) {
    Result<RunReportData> d = load(db, run);
    if (!d.ok()) return d.error().message;
    return write_file(path, run_report_html(*d));
}

int run_report(const ReportArgs& a, const std::string& config_path) {
    Result<std::string> db = history_path(a.db, config_path);
    if (!db.ok()) return runtime_error(db.error().message);
    if (a.markdown) {
        Result<RunReportData> d = load(*db, a.run);
        if (!d.ok()) return runtime_error(d.error().message);
        write_stdout(run_report_markdown(*d));
        return kExitOk;
    }
    const std::string path = a.html.empty() ? "baton-run-" + std::to_string(a.run) + ".html" : a.html;
    if (std::string e = write_html_report(*db, a.run, path); !e.empty()) return runtime_error(e);
    if (path != "-")
        std::fprintf(stderr, "baton report: run %lld written to %s\n", static_cast<long long>(a.run), path.c_str());
    return kExitOk;
}

}  // namespace baton::cli
