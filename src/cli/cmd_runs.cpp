#include "cli/cmd_runs.hpp"

#include <algorithm>
#include <cmath>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "cli/cli_common.hpp"
#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "store/run_json.hpp"
#include "report/run_figures.hpp"
#include "report/snapshot_text.hpp"
#include "sample/gpu/throttle_reasons.hpp"
#include "store/history.hpp"

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

std::string list(const std::vector<RunRecord>& runs, bool json) {
    std::string out;
    if (!json)
        out += fmt::format("{:>4}  {:<5}  {:<11}  {:<20}  {:>9}  {:>4}  {:>7}  {:>8}  {}\n", "ID", "KIND", "STATE",
                           "STARTED (UTC)", "DURATION", "EXIT", "SAMPLES", "FINDINGS", "NAME");
    for (const RunRecord& r : runs) {
        const double seconds = r.end_ms ? static_cast<double>(*r.end_ms - r.start_ms) / 1000.0 : -1;
        if (json) {
            append_run_json(r, out);
            out.push_back('\n');
        } else {
            out += fmt::format("{:>4}  {:<5}  {:<11}  {:<20}  {:>9}  {:>4}  {:>7}  {:>8}  {}\n", r.id, r.kind, r.state,
                               rfc3339_utc(r.start_ms).substr(0, 19),
                               seconds >= 0 ? fmt::format("{:.1f} s", seconds) : "-",
                               r.exit_status ? std::to_string(*r.exit_status) : "-", r.samples, r.findings, r.name);
        }
    }
    return out;
}

// One exported column: its name and its value in a sample (nullopt: not recorded). Values are
// in base units, like the snapshot JSON: bytes, bytes per second, percent, seconds.
struct Column {
    const char* name;
    std::optional<double> (*value)(const RunSample&);
};
struct GpuColumn {
    const char* name;
    std::optional<double> (*value)(const RunSample::Gpu&);
};

constexpr double kGiB = 1073741824.0;

// A stored figure times `scale`; negative means not recorded (older sample versions).
std::optional<double> recorded(float v, double scale = 1) {
    return v < 0 ? std::nullopt : std::optional<double>(v * scale);
}

const Column kColumns[] = {
    {"cpu_percent", [](const RunSample& s) -> std::optional<double> { return s.cpu_percent; }},
    {"iowait_percent", [](const RunSample& s) -> std::optional<double> { return s.iowait_percent; }},
    {"memory_used_bytes", [](const RunSample& s) -> std::optional<double> { return s.memory_used_gib * kGiB; }},
    {"swap_bytes_per_second", [](const RunSample& s) -> std::optional<double> { return s.swap_mb_per_s * 1e6; }},
    {"job_cpu_percent", [](const RunSample& s) -> std::optional<double> { return s.job_cpu_percent; }},
    {"job_rss_bytes", [](const RunSample& s) -> std::optional<double> { return s.job_rss_gib * kGiB; }},
    {"disk_read_bytes_per_second", [](const RunSample& s) { return recorded(s.disk_read_mb_s, 1e6); }},
    {"disk_write_bytes_per_second", [](const RunSample& s) { return recorded(s.disk_write_mb_s, 1e6); }},
};

const GpuColumn kGpuColumns[] = {
    {"utilization_percent", [](const RunSample::Gpu& g) -> std::optional<double> { return g.utilization; }},
    {"memory_used_bytes", [](const RunSample::Gpu& g) -> std::optional<double> { return g.memory_used_gib * kGiB; }},
    {"sm_activity_percent", [](const RunSample::Gpu& g) { return recorded(g.sm_activity); }},
    {"power_watts", [](const RunSample::Gpu& g) { return recorded(g.power_watts); }},
    {"temperature_celsius", [](const RunSample::Gpu& g) { return recorded(g.temperature_celsius); }},
    {"sm_clock_mhz", [](const RunSample::Gpu& g) { return recorded(g.sm_clock_mhz); }},
};

// The clock-event reasons of a GPU sample, when recorded (sample version 3).
std::optional<std::vector<std::string>> throttle_reasons(const RunSample::Gpu& g) {
    if (g.throttle_reasons == RunSample::Gpu::kThrottleUnknown) return std::nullopt;
    return decode_throttle_reasons(g.throttle_reasons);
}

// A number as exported: integers without a fraction (bytes), others to float precision.
std::string number(double v) {
    if (std::abs(v) >= 1e4 || v == std::floor(v)) return fmt::format("{:.0f}", v);
    return fmt::format("{:.6g}", v);
}

std::string cell(std::optional<double> v) {
    return v ? number(*v) : std::string();
}

std::string export_samples(const std::vector<RunSample>& samples, const std::string& format) {
    std::vector<unsigned> gpus;
    for (const RunSample& s : samples)
        for (const RunSample::Gpu& g : s.gpus)
            if (std::find(gpus.begin(), gpus.end(), g.index) == gpus.end()) gpus.push_back(g.index);
    std::sort(gpus.begin(), gpus.end());
    std::string out;
    if (format == "csv") {
        out += "time";
        for (const Column& c : kColumns) out += fmt::format(",{}", c.name);
        for (unsigned g : gpus)
            for (const GpuColumn& c : kGpuColumns) out += fmt::format(",gpu{}_{}", g, c.name);
        for (unsigned g : gpus) out += fmt::format(",gpu{}_throttle_reasons", g);
        out += "\n";
        for (const RunSample& s : samples) {
            out += rfc3339_utc(s.t_ms);
            for (const Column& c : kColumns) out += "," + cell(c.value(s));
            for (unsigned g : gpus) {
                auto it =
                    std::find_if(s.gpus.begin(), s.gpus.end(), [&](const RunSample::Gpu& x) { return x.index == g; });
                for (const GpuColumn& c : kGpuColumns)
                    out += "," + (it == s.gpus.end() ? std::string() : cell(c.value(*it)));
            }
            for (unsigned g : gpus) {  // the reasons joined by ';' (none: empty; not recorded: empty too)
                auto it =
                    std::find_if(s.gpus.begin(), s.gpus.end(), [&](const RunSample::Gpu& x) { return x.index == g; });
                std::string reasons;
                if (it != s.gpus.end())
                    if (auto r = throttle_reasons(*it))
                        for (const std::string& n : *r) reasons += (reasons.empty() ? "" : ";") + n;
                out += "," + reasons;
            }
            out += "\n";
        }
        return out;
    }
    for (const RunSample& s : samples) {
        JsonWriter w(out);
        w.begin_object();
        w.field("time", rfc3339_utc(s.t_ms));
        for (const Column& c : kColumns)
            if (std::optional<double> v = c.value(s)) {
                w.key(c.name);
                w.value(*v);
            }
        w.key("gpus");
        w.begin_array();
        for (const RunSample::Gpu& g : s.gpus) {
            w.begin_object();
            w.field("index", static_cast<unsigned>(g.index));
            for (const GpuColumn& c : kGpuColumns)
                if (std::optional<double> v = c.value(g)) {
                    w.key(c.name);
                    w.value(*v);
                }
            if (auto reasons = throttle_reasons(g)) {
                w.key("throttle_reasons");
                w.begin_array();
                for (const std::string& n : *reasons) w.value(n);
                w.end_array();
            }
            w.end_object();
        }
        w.end_array();
        w.end_object();
        w.finish();
        out.push_back('\n');
    }
    return out;
}

// The hook's steps (python/baton), one per line or row, in seconds.
std::string export_steps(const std::vector<StepEvent>& steps, const std::string& format) {
    std::string out;
    if (format == "csv") out += "time,pid,rank,step,step_seconds,data_wait_seconds,samples\n";
    for (const StepEvent& e : steps) {
        if (format == "csv") {
            out += fmt::format("{},{},{},{},{},{},{}\n", rfc3339_utc(e.t_ms), e.pid, e.rank, e.step,
                               number(e.step_ms / 1000.0), number(e.wait_ms / 1000.0),
                               e.samples ? std::to_string(*e.samples) : "");
            continue;
        }
        JsonWriter w(out);
        w.begin_object();
        w.field("time", rfc3339_utc(e.t_ms));
        w.field("pid", e.pid);
        w.field("rank", e.rank);
        w.field("step", e.step);
        w.field("step_seconds", e.step_ms / 1000.0);
        w.field("data_wait_seconds", e.wait_ms / 1000.0);
        w.optional_field("samples", e.samples);
        w.end_object();
        w.finish();
        if (!e.data.empty() && out.back() == '}') {  // the hook's own figures (memory stats, the scaler), as sent
            out.pop_back();
            out += ",\"data\":" + e.data + "}";
        }
        out.push_back('\n');
    }
    return out;
}

// `runs prune`: what goes (or would, with --dry-run), and the space given back.
int prune(History& h, const RunsArgs& a) {
    const std::int64_t before = unix_millis() - static_cast<std::int64_t>(a.older_than * 1000);
    Result<std::vector<RunRecord>> going = h.prunable(before);
    if (!going.ok()) return runtime_error(going.error().message);
    std::int64_t freed = 0;
    std::string note;  // why the space was not given back
    if (!a.dry_run) {
        Result<int> n = h.prune(before);
        if (!n.ok()) return runtime_error(n.error().message);
        if (*n > 0) {
            Result<std::int64_t> v = h.vacuum();
            if (v.ok())
                freed = *v;
            else
                note = v.error().message;
        }
    }
    std::string out;
    if (a.json) {
        JsonWriter w(out);
        w.begin_object();
        w.field("dry_run", a.dry_run);
        w.key("runs");
        w.begin_array();
        for (const RunRecord& r : *going) w.value(r.id);
        w.end_array();
        if (!a.dry_run) w.field("bytes_freed", freed);
        if (!note.empty()) w.field("error", note);
        w.end_object();
        w.finish();
        out.push_back('\n');
    } else {
        const std::size_t n = going->size();
        out = fmt::format("{} {} run{}", a.dry_run ? "would prune" : "pruned", n, n == 1 ? "" : "s");
        if (n) {
            out += ":";
            for (const RunRecord& r : *going) out += fmt::format(" {}", r.id);
        }
        if (!a.dry_run && n) out += fmt::format(", {} freed", human_bytes(static_cast<double>(freed)));
        out += "\n";
        if (!note.empty()) out += "space not given back: " + note + "\n";
    }
    write_stdout(out);
    return kExitOk;
}

}  // namespace

int run_runs(const RunsArgs& a, const std::string& config_path) {
    const bool exporting = a.export_->parsed();
    if (exporting && a.json && a.format != "jsonl")
        return usage_error("runs export: --json is --format jsonl; drop one of them");
    // Prune deletes; everything else only reads (a read-only history, or someone else's, is fine).
    Result<History> h =
        open_history(a.db, config_path, a.prune->parsed() ? HistoryAccess::manage : HistoryAccess::read);
    if (!h.ok()) return runtime_error(h.error().message);
    if (a.prune->parsed()) return prune(*h, a);
    if (!a.show->parsed() && !exporting) {
        Result<std::vector<RunRecord>> runs = h->runs();
        if (!runs.ok()) return runtime_error(runs.error().message);
        write_stdout(list(*runs, a.json));
        return kExitOk;
    }
    Result<std::int64_t> id = parse_run_id(a.run);
    if (!id.ok()) return runtime_error(id.error().message);
    Result<RunRecord> it = h->run(*id);
    if (!it.ok()) return runtime_error(it.error().message);
    Result<std::vector<RecordedFinding>> findings = h->findings(*id);
    if (!findings.ok()) return runtime_error(findings.error().message);
    if (exporting) {
        const std::string format = a.json ? "jsonl" : a.format;
        if (a.steps) {
            Result<std::vector<StepEvent>> steps = h->steps(*id);
            if (!steps.ok()) return runtime_error(steps.error().message);
            write_stdout(export_steps(*steps, format));
            return kExitOk;
        }
        Result<std::vector<RunSample>> samples = h->samples(*id);
        if (!samples.ok()) return runtime_error(samples.error().message);
        write_stdout(export_samples(*samples, format));
        return kExitOk;
    }
    if (a.json) {
        std::string out;
        append_run_json(*it, out, &*findings);
        write_stdout(out + "\n");
        return kExitOk;
    }
    std::string out = list({*it}, false);
    out += fmt::format("command: {}\ncwd: {}\nhost: {}\n", it->command, it->cwd, it->host);
    if (it->cpu_count) out += "machine: " + machine_text(*it) + "\n";
    for (const RecordedFinding& f : *findings)
        out += fmt::format("{} {} {} [{}]: {}\n", rfc3339_utc(f.t_ms).substr(11, 8), f.severity, f.rule, f.subject,
                           f.summary);
    if (!it->summary.empty()) out += "\n" + it->summary;
    write_stdout(out);
    return kExitOk;
}

}  // namespace baton::cli
