// `baton report RUN [--html FILE | --markdown]`: a recorded run as a page with charts, or as Markdown.
#pragma once

#include <string>

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

}  // namespace baton::cli
