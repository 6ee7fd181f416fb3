// `baton report RUN [--html FILE | --markdown]`: a recorded run as a page with charts, or as Markdown.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "store/history.hpp"

namespace CLI {
class App;
}

namespace baton::run {
struct RunStats;
}

namespace baton::cli {

struct ReportArgs {
    std::string db;
    std::string run;   // the id as typed
    std::string html;  // the file to write; "-" for stdout; empty: baton-run-ID.html
    bool markdown = false;
};

CLI::App* add_report_command(CLI::App& app, ReportArgs& args);
int run_report(const ReportArgs& args, const std::string& config_path);

// Writes run `run` of the history `h` as HTML to `path` ("-": stdout).
Status write_html_report(store::History& h, std::int64_t run, const std::string& path);

// What `baton run` and `baton launch` write when they end: the HTML report (--report, read back
// from the history at `db_path`) and the summary JSON (--summary-json). Returns the summary's
// lines about them ("  report: FILE", "  report: not written: WHY"); `what` is "run" or "launch".
std::string write_run_outputs(const run::RunStats& stats, const std::string& db_path, const std::string& report,
                              const std::string& summary_json, std::string_view what);

}  // namespace baton::cli
