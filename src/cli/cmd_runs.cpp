#include "cli/cmd_runs.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "cli/cli_common.hpp"
#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "store/history.hpp"

namespace baton::cli {

CLI::App* add_runs_command(CLI::App& app, RunsArgs& a) {
    CLI::App* cmd = app.add_subcommand("runs", "List the runs recorded by baton run");
    cmd->add_option("--db", a.db, "History database (default $XDG_STATE_HOME/baton/baton.db)");
    cmd->add_flag("--json", a.json, "One JSON object per run (JSON Lines)");
    return cmd;
}

int run_runs(const RunsArgs& a) {
    Result<History> h = History::open(a.db.empty() ? History::default_path() : a.db);
    if (!h.ok()) return runtime_error(h.error().message);
    Result<std::vector<RunRecord>> runs = h->runs();
    if (!runs.ok()) return runtime_error(runs.error().message);
    std::string out;
    if (!a.json)
        out += fmt::format("{:>4}  {:<11}  {:<20}  {:>9}  {:>4}  {:>7}  {:>8}  {}\n", "ID", "STATE", "STARTED (UTC)",
                           "DURATION", "EXIT", "SAMPLES", "FINDINGS", "NAME");
    for (const RunRecord& r : *runs) {
        const double seconds = r.end_ms ? static_cast<double>(*r.end_ms - r.start_ms) / 1000.0 : -1;
        if (a.json) {
            JsonWriter w(out);
            w.begin_object();
            w.field("id", r.id);
            w.field("name", r.name);
            w.field("command", r.command);
            w.field("cwd", r.cwd);
            w.field("host", r.host);
            w.field("state", r.state);
            w.field("start", rfc3339_utc(r.start_ms));
            if (r.end_ms) w.field("end", rfc3339_utc(*r.end_ms));
            w.optional_field("exit_status", r.exit_status);
            w.field("samples", r.samples);
            w.field("findings", r.findings);
            w.end_object();
            w.finish();
            out.push_back('\n');
        } else {
            out += fmt::format("{:>4}  {:<11}  {:<20}  {:>9}  {:>4}  {:>7}  {:>8}  {}\n", r.id, r.state,
                               rfc3339_utc(r.start_ms).substr(0, 19),
                               seconds >= 0 ? fmt::format("{:.1f} s", seconds) : "-",
                               r.exit_status ? std::to_string(*r.exit_status) : "-", r.samples, r.findings, r.name);
        }
    }
    return write_stdout(out) ? kExitOk : kExitOk;
}

}  // namespace baton::cli
