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

std::string write_html_report(History& h, std::int64_t run, const std::string& path) {
    Result<StoredRun> d = h.load_run(run);
    if (!d.ok()) return d.error().message;
    return write_file(path, run_report_html(*d));
}

int run_report(const ReportArgs& a, const std::string& config_path) {
    Result<History> h = open_history(a.db, config_path);
    if (!h.ok()) return runtime_error(h.error().message);
    if (a.markdown) {
        Result<StoredRun> d = h->load_run(a.run);
        if (!d.ok()) return runtime_error(d.error().message);
        write_stdout(run_report_markdown(*d));
        return kExitOk;
    }
    const std::string path = a.html.empty() ? "baton-run-" + std::to_string(a.run) + ".html" : a.html;
    if (std::string e = write_html_report(*h, a.run, path); !e.empty()) return runtime_error(e);
    if (path != "-")
        std::fprintf(stderr, "baton report: run %lld written to %s\n", static_cast<long long>(a.run), path.c_str());
    return kExitOk;
}

}  // namespace baton::cli
