#include "cli/cmd_runs.hpp"

#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "cli/cli_common.hpp"
#include "cli/cmd_diagnose.hpp"
#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "report/run_figures.hpp"
#include "store/history.hpp"

namespace baton::cli {

CLI::App* add_runs_command(CLI::App& app, RunsArgs& a) {
    CLI::App* cmd = app.add_subcommand("runs", "The runs recorded by baton run: list (default), show, export, prune");
    cmd->add_option("--db", a.db,
                    "History database (default: [history] db in the config, else $XDG_STATE_HOME/baton/baton.db)");
    cmd->add_flag("--json", a.json, "List as JSON Lines (one object per run)");
    cmd->require_subcommand(0, 1);
    cmd->fallthrough();  // --db may follow the action
    a.show = cmd->add_subcommand("show", "One run: its record, findings and summary");
    a.show->add_option("run", a.run, "Run id")->required();
    a.export_ = cmd->add_subcommand("export", "One run's samples, to stdout");
    a.export_->add_option("run", a.run, "Run id")->required();
    a.export_->add_option("--format", a.format, "jsonl or csv (default jsonl)")->check(CLI::IsMember({"jsonl", "csv"}));
    a.prune = cmd->add_subcommand("prune", "Delete finished and interrupted runs older than a duration");
    a.prune->add_option("--older-than", a.older_than, "Age: 30d, 12h, 90m, 3600s")->required();
    return cmd;
}

namespace {

void append_run_json(const RunRecord& r, std::string& out);

std::string list(const std::vector<RunRecord>& runs, bool json) {
    std::string out;
    if (!json)
        out += fmt::format("{:>4}  {:<11}  {:<20}  {:>9}  {:>4}  {:>7}  {:>8}  {}\n", "ID", "STATE", "STARTED (UTC)",
                           "DURATION", "EXIT", "SAMPLES", "FINDINGS", "NAME");
    for (const RunRecord& r : runs) {
        const double seconds = r.end_ms ? static_cast<double>(*r.end_ms - r.start_ms) / 1000.0 : -1;
        if (json) {
            append_run_json(r, out);
            out.push_back('\n');
        } else {
            out += fmt::format("{:>4}  {:<11}  {:<20}  {:>9}  {:>4}  {:>7}  {:>8}  {}\n", r.id, r.state,
                               rfc3339_utc(r.start_ms).substr(0, 19),
                               seconds >= 0 ? fmt::format("{:.1f} s", seconds) : "-",
                               r.exit_status ? std::to_string(*r.exit_status) : "-", r.samples, r.findings, r.name);
        }
    }
    return out;
}

// One run as a JSON object, without a newline.
void append_run_json(const RunRecord& r, std::string& out) {
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
}

// A figure for CSV: empty when not recorded (negative).
std::string recorded(float v) {
    return v < 0 ? std::string() : fmt::format("{:g}", v);
}

std::string export_samples(const std::vector<RunSample>& samples, const std::string& format) {
    std::vector<unsigned> gpus;
    for (const RunSample& s : samples)
        for (const RunSample::Gpu& g : s.gpus)
            if (std::find(gpus.begin(), gpus.end(), g.index) == gpus.end()) gpus.push_back(g.index);
    std::sort(gpus.begin(), gpus.end());
    std::string out;
    if (format == "csv") {
        out +=
            "time,cpu_percent,iowait_percent,memory_used_gib,swap_mb_per_second,job_cpu_percent,job_rss_gib,"
            "disk_read_mb_per_second,disk_write_mb_per_second";
        for (unsigned g : gpus)
            out += fmt::format(",gpu{0}_utilization_percent,gpu{0}_memory_used_gib,gpu{0}_sm_activity_percent", g);
        out += "\n";
    }
    for (const RunSample& s : samples) {
        if (format == "csv") {
            out += fmt::format("{},{:g},{:g},{:g},{:g},{:g},{:g},{},{}", rfc3339_utc(s.t_ms), s.cpu_percent,
                               s.iowait_percent, s.memory_used_gib, s.swap_mb_per_s, s.job_cpu_percent, s.job_rss_gib,
                               recorded(s.disk_read_mb_s), recorded(s.disk_write_mb_s));
            for (unsigned g : gpus) {
                auto it =
                    std::find_if(s.gpus.begin(), s.gpus.end(), [&](const RunSample::Gpu& x) { return x.index == g; });
                if (it == s.gpus.end())
                    out += ",,,";
                else
                    out += fmt::format(",{:g},{:g},{}", it->utilization, it->memory_used_gib,
                                       it->sm_activity < 0 ? std::string() : fmt::format("{:g}", it->sm_activity));
            }
            out += "\n";
            continue;
        }
        JsonWriter w(out);
        w.begin_object();
        w.field("time", rfc3339_utc(s.t_ms));
        w.field("cpu_percent", static_cast<double>(s.cpu_percent));
        w.field("iowait_percent", static_cast<double>(s.iowait_percent));
        w.field("memory_used_gib", static_cast<double>(s.memory_used_gib));
        w.field("swap_mb_per_second", static_cast<double>(s.swap_mb_per_s));
        w.field("job_cpu_percent", static_cast<double>(s.job_cpu_percent));
        w.field("job_rss_gib", static_cast<double>(s.job_rss_gib));
        if (s.disk_read_mb_s >= 0) w.field("disk_read_mb_per_second", static_cast<double>(s.disk_read_mb_s));
        if (s.disk_write_mb_s >= 0) w.field("disk_write_mb_per_second", static_cast<double>(s.disk_write_mb_s));
        w.key("gpus");
        w.begin_array();
        for (const RunSample::Gpu& g : s.gpus) {
            w.begin_object();
            w.field("index", static_cast<unsigned>(g.index));
            w.field("utilization_percent", static_cast<double>(g.utilization));
            w.field("memory_used_gib", static_cast<double>(g.memory_used_gib));
            if (g.sm_activity >= 0) w.field("sm_activity_percent", static_cast<double>(g.sm_activity));
            w.end_object();
        }
        w.end_array();
        w.end_object();
        w.finish();
        out.push_back('\n');
    }
    return out;
}

}  // namespace

int run_runs(const RunsArgs& a, const std::string& config_path) {
    Result<History> h = open_history(a.db, config_path);
    if (!h.ok()) return runtime_error(h.error().message);
    if (a.prune->parsed()) {
        std::optional<double> seconds = parse_duration(a.older_than);
        if (!seconds) return usage_error("--older-than: expected an age such as 30d, 12h or 90m");
        Result<int> n = h->prune(unix_millis() - static_cast<std::int64_t>(*seconds * 1000));
        if (!n.ok()) return runtime_error(n.error().message);
        write_stdout(fmt::format("pruned {} run{}\n", *n, *n == 1 ? "" : "s"));
        return kExitOk;
    }
    if (!a.show->parsed() && !a.export_->parsed()) {
        Result<std::vector<RunRecord>> runs = h->runs();
        if (!runs.ok()) return runtime_error(runs.error().message);
        write_stdout(list(*runs, a.json));
        return kExitOk;
    }
    Result<RunRecord> it = h->run(a.run);
    if (!it.ok()) return runtime_error(it.error().message);
    if (a.export_->parsed()) {
        Result<std::vector<RunSample>> samples = h->samples(a.run);
        if (!samples.ok()) return runtime_error(samples.error().message);
        write_stdout(export_samples(*samples, a.format));
        return kExitOk;
    }
    std::string out = list({*it}, false);
    out += fmt::format("command: {}\ncwd: {}\nhost: {}\n", it->command, it->cwd, it->host);
    if (it->cpu_count) out += "machine: " + machine_text(*it) + "\n";
    Result<std::vector<RecordedFinding>> findings = h->findings(a.run);
    if (findings.ok())
        for (const RecordedFinding& f : *findings)
            out += fmt::format("{} {} {} [{}]: {}\n", rfc3339_utc(f.t_ms).substr(11, 8), f.severity, f.rule, f.subject,
                               f.summary);
    if (!it->summary.empty()) out += "\n" + it->summary;
    write_stdout(out);
    return kExitOk;
}

}  // namespace baton::cli
