#include "cli/cmd_compare.hpp"

#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "cli/cli_common.hpp"
#include "core/json_writer.hpp"
#include "core/units.hpp"
#include "report/run_comparison.hpp"
#include "report/run_figures.hpp"
#include "store/history.hpp"

namespace baton::cli {

CLI::App* add_compare_command(CLI::App& app, CompareArgs& a) {
    CLI::App* cmd = app.add_subcommand("compare", "Two recorded runs (or two benches) side by side: what changed");
    cmd->add_option("run_a", a.a, "The first run's id")->required();
    cmd->add_option("run_b", a.b, "The second run's id")->required();
    cmd->add_flag("--json", a.json, "One JSON object: both runs, the figures with their changes, the findings matched");
    cmd->add_option("--db", a.db,
                    "History database (default: [history] db in the config, else $XDG_STATE_HOME/baton/baton.db)");
    return cmd;
}

namespace {

std::string value(double v, const char* unit) {
    return v < 0 ? std::string("-") : fmt::format("{:.1f}{}", v, unit);
}

std::string delta(double a, double b, const char* unit) {
    if (a < 0 || b < 0) return "";
    const double d = b - a;
    if (std::abs(d) < 0.05) return "same";
    std::string s = fmt::format("{:+.1f}{}", d, unit);
    if (a >= 1) s += fmt::format(" ({:+.0f} %)", 100.0 * d / a);  // relative change only on a real base
    return s;
}

// The two records compared, as the JSON's "runs".
void runs_json(JsonWriter& w, const RunRecord& ra, const RunRecord& rb) {
    w.key("runs");
    w.begin_array();
    for (const RunRecord* r : {&ra, &rb}) {
        w.begin_object();
        w.field("id", r->id);
        w.field("name", r->name);
        w.field("kind", r->kind);
        w.field("state", r->state);
        w.optional_field("exit_status", r->exit_status);
        w.end_object();
    }
    w.end_array();
}

// Two benches link by link (matched by bench and link name): before and after a driver update or
// a BIOS change.
int compare_benches(const CompareArgs& a, History& h, const RunRecord& ra, const RunRecord& rb) {
    Result<std::vector<BenchLinkRecord>> la = h.bench_links(ra.id);
    if (!la.ok()) return runtime_error(la.error().message);
    Result<std::vector<BenchLinkRecord>> lb = h.bench_links(rb.id);
    if (!lb.ok()) return runtime_error(lb.error().message);
    struct Pair {
        std::string bench, link;
        const BenchLinkRecord *a = nullptr, *b = nullptr;
    };
    std::vector<Pair> pairs;
    auto slot = [&](const BenchLinkRecord& l) -> Pair& {
        for (Pair& p : pairs)
            if (p.bench == l.bench && p.link == l.link) return p;
        pairs.push_back({l.bench, l.link});
        return pairs.back();
    };
    for (const BenchLinkRecord& l : *la) slot(l).a = &l;
    for (const BenchLinkRecord& l : *lb) slot(l).b = &l;
    std::string out;
    if (a.json) {
        JsonWriter w(out);
        w.begin_object();
        runs_json(w, ra, rb);
        w.key("links");
        w.begin_array();
        for (const Pair& p : pairs) {
            w.begin_object();
            w.field("bench", p.bench);
            w.field("link", p.link);
            for (const auto& [key, l] : {std::pair{"a", p.a}, std::pair{"b", p.b}}) {
                w.key(key);
                if (!l) {
                    w.null();
                    continue;
                }
                w.begin_object();
                w.field("unit", l->unit);
                w.field("measured", l->measured);
                w.optional_field("peak", l->peak);
                w.field("verdict", l->verdict);
                w.end_object();
            }
            if (p.a && p.b && p.a->measured > 0) w.field("change", p.b->measured / p.a->measured - 1);
            w.end_object();
        }
        w.end_array();
        w.end_object();
        w.finish();
        out.push_back('\n');
        return write_stdout(out) ? kExitOk : kExitFailure;
    }
    auto cell = [](const BenchLinkRecord* l) -> std::string {
        if (!l) return "-";
        if (l->verdict == "skipped") return "skipped";
        return (l->unit == "B/s" ? format_rate(l->measured) : fmt::format("{:.4g} {}", l->measured, l->unit)) + " " +
               l->verdict;
    };
    out += fmt::format("{:<28} {:>22} {:>22}   {}\n", "", fmt::format("bench {}", ra.id),
                       fmt::format("bench {}", rb.id), "change");
    for (const Pair& p : pairs) {
        std::string change;
        if (p.a && p.b && p.a->measured > 0 && p.b->measured > 0)
            change = fmt::format("{:+.0f} %", 100 * (p.b->measured / p.a->measured - 1));
        out += fmt::format("{:<28} {:>22} {:>22}   {}\n", p.link, cell(p.a), cell(p.b), change);
    }
    return write_stdout(out) ? kExitOk : kExitFailure;
}

}  // namespace

int run_compare(const CompareArgs& a, const std::string& config_path) {
    Result<History> h = open_history(a.db, config_path);
    if (!h.ok()) return runtime_error(h.error().message);
    Result<std::int64_t> ia = parse_run_id(a.a);
    if (!ia.ok()) return runtime_error(ia.error().message);
    Result<std::int64_t> ib = parse_run_id(a.b);
    if (!ib.ok()) return runtime_error(ib.error().message);
    Result<StoredRun> da = h->load_run(*ia);
    if (!da.ok()) return runtime_error(da.error().message);
    Result<StoredRun> db = h->load_run(*ib);
    if (!db.ok()) return runtime_error(db.error().message);
    const RunRecord& ra = da->run;
    const RunRecord& rb = db->run;
    if (ra.kind != rb.kind)
        return runtime_error(fmt::format("run {} is a {} and run {} a {}: only two runs or two benches compare", ra.id,
                                         ra.kind == "bench" ? "bench" : "run", rb.id,
                                         rb.kind == "bench" ? "bench" : "run"));
    if (ra.kind == "bench") return compare_benches(a, *h, ra, rb);
    const RunFigures fa = run_figures(ra, da->samples, da->findings, da->steps);
    const RunFigures fb = run_figures(rb, db->samples, db->findings, db->steps);
    const std::vector<FindingChange> changes = compare_findings(*da, *db);
    std::string out;
    // One figure of both runs, with the change; `change_unit` is " pt" for percentages.
    struct Row {
        std::string name;
        double RunFigures::*field;
        const char* unit;
        const char* change_unit;
    };
    std::vector<Row> rows = {
        {"duration", &RunFigures::seconds, " s", " s"},
        {"GPU utilisation avg", &RunFigures::gpu_util_avg, " %", " pt"},
        {"GPU utilisation p95", &RunFigures::gpu_util_p95, " %", " pt"},
        {"GPU memory peak", &RunFigures::gpu_memory_peak_gib, " GiB", " GiB"},
        {"job CPU avg", &RunFigures::job_cpu_avg, " %", " pt"},
        {"job RSS peak", &RunFigures::job_rss_peak_gib, " GiB", " GiB"},
        {"host CPU avg", &RunFigures::host_cpu_avg, " %", " pt"},
        {"I/O wait avg", &RunFigures::iowait_avg, " %", " pt"},
    };
    if (fa.steps || fb.steps) {  // the Python hook reported steps in at least one of them
        rows.push_back({"throughput", &RunFigures::samples_per_second, " /s", " /s"});
        rows.push_back({"step time median", &RunFigures::step_ms_median, " ms", " ms"});
        rows.push_back({"data wait", &RunFigures::data_wait_percent, " %", " pt"});
    }
    if (a.json) {
        JsonWriter w(out);
        w.begin_object();
        runs_json(w, ra, rb);
        w.key("figures");
        w.begin_array();
        for (const Row& row : rows) {
            w.begin_object();
            w.field("name", row.name);
            w.field("unit", std::string(row.unit).substr(1));
            for (const auto& [key, v] : {std::pair{"a", fa.*row.field}, std::pair{"b", fb.*row.field}}) {
                w.key(key);
                if (v < 0)
                    w.null();  // not recorded in that run
                else
                    w.value(v);
            }
            w.end_object();
        }
        w.end_array();
        w.key("findings");
        w.begin_array();
        for (const FindingChange& c : changes) {
            w.begin_object();
            w.field("rule", c.rule);
            w.field("subject", c.subject);
            w.field("status", c.status == FindingChange::Status::gone    ? "gone"
                              : c.status == FindingChange::Status::fresh ? "new"
                                                                         : "both");
            if (!c.severity_a.empty()) w.field("severity_a", c.severity_a);
            if (!c.severity_b.empty()) w.field("severity_b", c.severity_b);
            w.key("evidence");
            w.begin_array();
            for (const FindingChange::Metric& m : c.evidence) {
                w.begin_object();
                w.field("metric", m.metric);
                w.field("a", m.a);
                w.field("b", m.b);
                w.end_object();
            }
            w.end_array();
            w.end_object();
        }
        w.end_array();
        w.end_object();
        w.finish();
        out.push_back('\n');
        write_stdout(out);
        return kExitOk;
    }
    auto row = [&](const std::string& name, const std::string& x, const std::string& y, const std::string& d) {
        out += fmt::format("{:<22} {:>14} {:>14}   {}\n", name, x, y, d);
    };
    row("", fmt::format("run {}", ra.id), fmt::format("run {}", rb.id), "change");
    row("name", ra.name.substr(0, 14), rb.name.substr(0, 14), "");
    row("state / exit", ra.state + (ra.exit_status ? " " + std::to_string(*ra.exit_status) : ""),
        rb.state + (rb.exit_status ? " " + std::to_string(*rb.exit_status) : ""), "");
    for (const Row& r : rows)
        row(r.name, value(fa.*r.field, r.unit), value(fb.*r.field, r.unit),
            delta(fa.*r.field, fb.*r.field, r.change_unit));
    if (!changes.empty()) out += "findings (matched by rule and subject: \"job\" is the run's own processes):\n";
    for (const FindingChange& c : changes) out += "  " + finding_change_text(c) + "\n";
    write_stdout(out);
    return kExitOk;
}

}  // namespace baton::cli
