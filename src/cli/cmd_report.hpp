// `baton report RUN [--html FILE | --markdown]`: a recorded run as a page with charts, or as Markdown.
#pragma once

#include <cstdint>
#include <string>

#include "store/history.hpp"

namespace CLI {
class App;
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

// Writes run `run` of the history `h` as HTML to `path` ("-": stdout). Returns "" or the error.
std::string write_html_report(History& h, std::int64_t run, const std::string& path);

}  // namespace baton::cli
