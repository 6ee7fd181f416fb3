#include "report/compare_view.hpp"

#include <cmath>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/json_writer.hpp"
#include "core/units.hpp"
#include "report/run_comparison.hpp"
#include "report/run_figures.hpp"

namespace baton::report {

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

// The profiler windows' mean steps compared: (name, ms in a or -1, ms in b or -1), the rows either has.
struct StepRow {
    std::string name;
    double a = -1, b = -1;
};

std::vector<StepRow> step_rows(const StepSection* sa, const StepSection* sb) {
    std::vector<StepRow> rows;
    auto slot = [&](const std::string& name) -> StepRow& {
        for (StepRow& r : rows)
            if (r.name == name) return r;
        rows.push_back({name});
        return rows.back();
    };
    for (const auto& [s, side] : {std::pair{sa, 0}, std::pair{sb, 1}}) {
        if (!s || !s->error.empty() || s->analysis.steps.empty()) continue;
        const profile::Analysis& an = s->analysis;
        auto put = [&, side = side](const std::string& name, double us) {
            (side == 0 ? slot(name).a : slot(name).b) = us / 1000;
        };
        put("step", an.step_us() / static_cast<double>(an.steps.size()));
        for (int d : an.devices) {
            const profile::GpuStep g = an.mean_gpu(d);
            for (std::size_t i = 0; i < profile::kGpuSlices; ++i)
                if (g.us[i] > 0) put(fmt::format("GPU{} {}", d, enum_name(static_cast<profile::GpuSlice>(i))), g.us[i]);
        }
        const profile::HostStep h = an.mean_host();
        for (std::size_t i = 0; i < profile::kHostPhases; ++i)
            if (h.us[i] > 0) put(std::string("host ") + enum_name(static_cast<profile::HostPhase>(i)), h.us[i]);
    }
    // A row one side lacks is 0 ms there when that side has a window at all.
    const bool has_a = sa && sa->error.empty() && !sa->analysis.steps.empty();
    const bool has_b = sb && sb->error.empty() && !sb->analysis.steps.empty();
    for (StepRow& r : rows) {
        if (has_a && r.a < 0) r.a = 0;
        if (has_b && r.b < 0) r.b = 0;
    }
    return rows;
}

// A figure one run may lack (negative: not recorded, no window): null in the JSON.
void figure_or_null(JsonWriter& w, std::string_view key, double v) {
    w.key(key);
    if (v < 0)
        w.null();
    else
        w.value(v);
}

// The two records compared, as the JSON's "runs".
void runs_json(JsonWriter& w, const store::RunRecord& ra, const store::RunRecord& rb) {
    w.key("runs");
    w.begin_array();
    for (const store::RunRecord* r : {&ra, &rb}) {
        w.begin_object();
        w.field("id", r->id);
        w.field("name", r->name);
        w.field("kind", store::run_kind_name(r->kind));
        w.field("state", store::run_state_name(r->state));
        w.optional_field("exit_status", r->exit_status);
        w.end_object();
    }
    w.end_array();
}

// One figure of both runs, with the change; `change_unit` is " pt" for percentages.
struct FigureRow {
    std::string name;
    double RunFigures::*field;
    const char* unit;
    const char* change_unit;
};

std::vector<FigureRow> figure_rows(const RunFigures& fa, const RunFigures& fb) {
    std::vector<FigureRow> rows = {
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
    if (fa.energy_joules >= 0 || fb.energy_joules >= 0) {  // GPUs' and CPU packages' energy, recorded
        rows.push_back({"energy", &RunFigures::energy_joules, " J", " J"});
        if (fa.joules_per_step >= 0 || fb.joules_per_step >= 0)
            rows.push_back({"energy per step", &RunFigures::joules_per_step, " J", " J"});
        if (fa.joules_per_sample >= 0 || fb.joules_per_sample >= 0)
            rows.push_back({"energy per sample", &RunFigures::joules_per_sample, " J", " J"});
    }
    return rows;
}

RunFigures figures_of(const store::StoredRun& r) {
    return run_figures(r.run, r.samples, r.findings, r.steps);
}

const char* status_name(FindingChange::Status s) {
    return s == FindingChange::Status::gone ? "gone" : s == FindingChange::Status::fresh ? "new" : "both";
}

void findings_json(JsonWriter& w, const std::vector<FindingChange>& changes) {
    w.key("findings");
    w.begin_array();
    for (const FindingChange& c : changes) {
        w.begin_object();
        w.field("rule", c.rule);
        w.field("subject", c.subject);
        w.field("status", status_name(c.status));
        if (!c.severity_a.empty()) w.field("severity_a", c.severity_a);
        if (!c.severity_b.empty()) w.field("severity_b", c.severity_b);
        w.optional_field("job_share_a", c.job_share_a);
        w.optional_field("job_share_b", c.job_share_b);
        if (c.job_share_a || c.job_share_b) w.field("cause", c.others() ? "other processes" : "the run's job");
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
}

std::string link_cell(const store::BenchLinkRecord* l) {
    if (!l) return "-";
    if (l->verdict == "skipped") return "skipped";
    return (l->unit == "B/s" ? format_rate(l->measured) : fmt::format("{:.4g} {}", l->measured, l->unit)) + " " +
           l->verdict;
}

}  // namespace

std::string compare_runs_text(const store::StoredRun& a, const store::StoredRun& b, const StepSection* sa,
                              const StepSection* sb) {
    const store::RunRecord& ra = a.run;
    const store::RunRecord& rb = b.run;
    const RunFigures fa = figures_of(a);
    const RunFigures fb = figures_of(b);
    std::string out;
    auto row = [&](const std::string& name, const std::string& x, const std::string& y, const std::string& d) {
        out += fmt::format("{:<22} {:>14} {:>14}   {}\n", name, x, y, d);
    };
    row("", fmt::format("run {}", ra.id), fmt::format("run {}", rb.id), "change");
    row("name", ra.name.substr(0, 14), rb.name.substr(0, 14), "");
    row("state / exit", store::run_state_name(ra.state) + (ra.exit_status ? " " + std::to_string(*ra.exit_status) : ""),
        run_state_name(rb.state) + (rb.exit_status ? " " + std::to_string(*rb.exit_status) : ""), "");
    for (const FigureRow& r : figure_rows(fa, fb))
        row(r.name, value(fa.*r.field, r.unit), value(fb.*r.field, r.unit),
            delta(fa.*r.field, fb.*r.field, r.change_unit));
    const std::vector<FindingChange> changes = compare_findings(a, b);
    std::string theirs, others;
    for (const FindingChange& c : changes) (c.others() ? others : theirs) += "  " + finding_change_text(c) + "\n";
    if (!theirs.empty())
        out += "findings (matched by rule and subject: \"job\" is the run's own processes):\n" + theirs;
    if (!others.empty()) out += "on the host, from other processes (no effect of either run):\n" + others;
    const std::vector<StepRow> steps = step_rows(sa, sb);
    if (!steps.empty()) {
        out += "step (the profiler windows' mean step, ms):\n";
        for (const StepRow& r : steps) row("  " + r.name, value(r.a, " ms"), value(r.b, " ms"), delta(r.a, r.b, " ms"));
        if (steps.front().a < 0 || steps.front().b < 0)
            out += fmt::format("  (only run {} has a profiler window: baton run --profile)\n",
                               steps.front().a < 0 ? rb.id : ra.id);
    }
    return out;
}

std::string compare_runs_json(const store::StoredRun& a, const store::StoredRun& b, const StepSection* sa,
                              const StepSection* sb) {
    const RunFigures fa = figures_of(a);
    const RunFigures fb = figures_of(b);
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    runs_json(w, a.run, b.run);
    w.key("figures");
    w.begin_array();
    for (const FigureRow& row : figure_rows(fa, fb)) {
        w.begin_object();
        w.field("name", row.name);
        w.field("unit", std::string(row.unit).substr(1));
        figure_or_null(w, "a", fa.*row.field);
        figure_or_null(w, "b", fb.*row.field);
        w.end_object();
    }
    w.end_array();
    findings_json(w, compare_findings(a, b));
    w.key("step");
    w.begin_array();
    for (const StepRow& r : step_rows(sa, sb)) {
        w.begin_object();
        w.field("name", r.name);
        figure_or_null(w, "a_ms", r.a);
        figure_or_null(w, "b_ms", r.b);
        w.end_object();
    }
    w.end_array();
    w.end_object();
    w.finish();
    out.push_back('\n');
    return out;
}

std::vector<LinkPair> pair_links(const std::vector<store::BenchLinkRecord>& la,
                                 const std::vector<store::BenchLinkRecord>& lb) {
    std::vector<LinkPair> pairs;
    auto slot = [&](const store::BenchLinkRecord& l) -> LinkPair& {
        for (LinkPair& p : pairs)
            if (p.bench == l.bench && p.link == l.link) return p;
        pairs.push_back({l.bench, l.link});
        return pairs.back();
    };
    for (const store::BenchLinkRecord& l : la) slot(l).a = &l;
    for (const store::BenchLinkRecord& l : lb) slot(l).b = &l;
    return pairs;
}

std::string compare_benches_text(const store::RunRecord& ra, const store::RunRecord& rb,
                                 const std::vector<store::BenchLinkRecord>& la,
                                 const std::vector<store::BenchLinkRecord>& lb) {
    std::string out = fmt::format("{:<28} {:>22} {:>22}   {}\n", "", fmt::format("bench {}", ra.id),
                                  fmt::format("bench {}", rb.id), "change");
    for (const LinkPair& p : pair_links(la, lb)) {
        std::string change;
        if (p.a && p.b && p.a->measured > 0 && p.b->measured > 0)
            change = fmt::format("{:+.0f} %", 100 * (p.b->measured / p.a->measured - 1));
        out += fmt::format("{:<28} {:>22} {:>22}   {}\n", p.link, link_cell(p.a), link_cell(p.b), change);
    }
    return out;
}

std::string compare_benches_json(const store::RunRecord& ra, const store::RunRecord& rb,
                                 const std::vector<store::BenchLinkRecord>& la,
                                 const std::vector<store::BenchLinkRecord>& lb) {
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    runs_json(w, ra, rb);
    w.key("links");
    w.begin_array();
    for (const LinkPair& p : pair_links(la, lb)) {
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
    return out;
}

}  // namespace baton::report
