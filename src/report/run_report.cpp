#include "report/run_report.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/printable.hpp"
#include "core/units.hpp"
#include "report/markdown_text.hpp"
#include "report/memory_section.hpp"
#include "report/run_figures.hpp"
#include "report/svg_chart.hpp"
#include "sample/gpu/throttle_reasons.hpp"
#include "store/history_runs.hpp"

namespace baton::report {

namespace {

using Rows = std::vector<std::pair<std::string, std::string>>;

double offset_s(const store::RunRecord& r, std::int64_t t_ms) {
    return static_cast<double>(t_ms - r.start_ms) / 1000.0;
}

std::string duration_text(double s) {
    if (s < 120) return fmt::format("{:.1f} s", s);
    return clock_offset(s) + (s >= 3600 ? " h" : " min");
}

std::string state_text(const store::RunRecord& r) {
    std::string s = store::run_state_name(r.state);
    if (r.exit_status) {
        const int e = *r.exit_status;
        s += e > 128 && e < 160 ? fmt::format(", exit {} (signal {})", e, e - 128) : fmt::format(", exit {}", e);
    }
    return s;
}

double sample_interval(const std::vector<store::RunSample>& s) {
    if (s.size() < 2) return 0;
    return static_cast<double>(s.back().t_ms - s.front().t_ms) / 1000.0 / static_cast<double>(s.size() - 1);
}

Rows run_rows(const report::RunReportData& d) {
    const store::RunRecord& r = d.run;
    Rows rows = {{"command", r.command}, {"directory", r.cwd}, {"host", r.host}};
    if (std::string m = machine_text(r); !m.empty()) rows.push_back({"machine", m});
    rows.push_back({"state", state_text(r)});
    rows.push_back({"started", rfc3339_utc(r.start_ms)});
    if (r.end_ms) rows.push_back({"ended", rfc3339_utc(*r.end_ms)});
    rows.push_back({"samples", fmt::format("{} (every {:.2g} s)", d.samples.size(), sample_interval(d.samples))});
    return rows;
}

// One row per GPU: the columns of kGpuColumns.
constexpr const char* kGpuColumns[] = {"GPU", "model", "utilisation avg", "p95", "SM activity avg", "peak memory"};

std::vector<std::vector<std::string>> gpu_rows(const RunFigures& f) {
    std::vector<std::vector<std::string>> rows;
    for (const GpuFigures& g : f.gpus)
        rows.push_back(
            {fmt::format("GPU{}", g.index), g.name.empty() ? "-" : g.name, fmt::format("{:.0f} %", g.util_avg),
             fmt::format("{:.0f} %", g.util_p95), g.sm_avg >= 0 ? fmt::format("{:.0f} %", g.sm_avg) : "not reported",
             g.memory_total_gib > 0 ? fmt::format("{:.1f} of {:.1f} GiB", g.memory_peak_gib, g.memory_total_gib)
                                    : fmt::format("{:.1f} GiB", g.memory_peak_gib)});
    return rows;
}

Rows figure_rows(const RunFigures& f) {
    Rows rows = {{"duration", duration_text(f.seconds)}};
    if (f.gpus.empty()) rows.push_back({"GPUs", "none seen in this run"});
    rows.push_back(
        {"job CPU (% of one core)", fmt::format("avg {:.0f} %, peak {:.0f} %", f.job_cpu_avg, f.job_cpu_peak)});
    rows.push_back({"job RSS peak", fmt::format("{:.2f} GiB", f.job_rss_peak_gib)});
    rows.push_back({"host CPU", fmt::format("avg {:.0f} %", f.host_cpu_avg)});
    rows.push_back({"host memory peak", fmt::format("{:.1f} GiB", f.host_memory_peak_gib)});
    rows.push_back({"swap traffic", fmt::format("{:.1f} MB", f.swap_mb)});
    rows.push_back({"I/O wait", fmt::format("avg {:.1f} %", f.iowait_avg)});
    if (f.steps)
        rows.push_back({"training steps (baton hook)",
                        fmt::format("{}, median {:.1f} ms, p95 {:.1f} ms, data wait {:.0f} % of step time{}", f.steps,
                                    f.step_ms_median, f.step_ms_p95, f.data_wait_percent,
                                    f.samples_per_second >= 0 ? fmt::format(", {:.0f} samples/s", f.samples_per_second)
                                                              : std::string())});
    if (!f.energy.empty()) rows.push_back({"energy", store::energy_text(f.energy)});
    if (f.disk_read_avg >= 0)
        rows.push_back(
            {"disk read / write", fmt::format("avg {:.1f} / {:.1f} MB/s, peak {:.1f} / {:.1f} MB/s", f.disk_read_avg,
                                              f.disk_write_avg, f.disk_read_peak, f.disk_write_peak)});
    return rows;
}

std::vector<unsigned> gpu_indices(const std::vector<store::RunSample>& samples) {
    std::vector<unsigned> out;
    for (const store::RunSample& s : samples)
        for (const store::RunSample::Gpu& g : s.gpus)
            if (std::find(out.begin(), out.end(), g.index) == out.end()) out.push_back(g.index);
    std::sort(out.begin(), out.end());
    return out;
}

// A series of one figure of every sample (those where `value` gives a number).
template <typename F>
ChartSeries series_of(const report::RunReportData& d, std::string label, F value) {
    ChartSeries s;
    s.label = std::move(label);
    for (const store::RunSample& x : d.samples)
        if (std::optional<double> v = value(x)) {
            s.t.push_back(offset_s(d.run, x.t_ms));
            s.values.push_back(*v);
        }
    return s;
}

// GPU `index`'s figure in one sample: `field` of its record, when the sample has the GPU and the figure.
template <typename Field>
std::optional<double> gpu_value(const store::RunSample& s, unsigned index, Field field) {
    for (const store::RunSample::Gpu& g : s.gpus)
        if (g.index == index) return std::optional<double>(field(g));
    return std::nullopt;
}

std::vector<Chart> charts(const report::RunReportData& d, double duration) {
    const store::RunRecord& r = d.run;
    std::vector<ChartMark> marks;
    for (std::size_t i = 0; i < d.findings.size(); ++i) {
        const store::RecordedFinding& f = d.findings[i];
        marks.push_back({offset_s(r, f.t_ms), f.severity,
                         fmt::format("#{} {} {} [{}]: {}", i + 1, f.severity, f.rule, f.subject, f.summary),
                         static_cast<int>(i + 1)});
    }
    std::vector<Chart> out;
    auto add = [&](std::string id, std::string name, std::string title, std::string unit, std::optional<double> y_max,
                   std::vector<ChartSeries> series) {
        out.push_back({std::move(id), std::move(title), std::move(unit), duration, y_max, std::move(series), marks,
                       std::move(name)});
    };
    const std::vector<unsigned> gpus = gpu_indices(d.samples);
    if (!gpus.empty()) {
        std::vector<ChartSeries> util, sm, memory;
        for (unsigned g : gpus) {
            util.push_back(series_of(d, fmt::format("GPU{}", g), [&](const store::RunSample& s) {
                return gpu_value(s, g, [](const store::RunSample::Gpu& x) { return x.utilization_percent; });
            }));
            ChartSeries activity = series_of(d, fmt::format("GPU{}", g), [&](const store::RunSample& s) {
                return gpu_value(s, g, [](const store::RunSample::Gpu& x) { return x.sm_activity_percent; });
            });
            if (!activity.values.empty()) sm.push_back(std::move(activity));
            memory.push_back(series_of(d, fmt::format("GPU{}", g), [&](const store::RunSample& s) {
                return gpu_value(s, g,
                                 [](const store::RunSample::Gpu& x) { return x.memory_used_bytes / kBytesPerGiB; });
            }));
        }
        std::optional<double> memory_top;
        for (const store::RunGpu& g : r.gpus)
            memory_top = std::max(memory_top.value_or(0), static_cast<double>(g.memory_total_bytes) / kBytesPerGiB);
        add("chart-gpu-utilization", "GPU util", "GPU utilisation (a kernel ran)", "%", 100.0, std::move(util));
        // SM activity (how much of the GPU the kernels occupy) only where the driver reports it.
        if (!sm.empty()) add("chart-gpu-sm", "GPU SM", "GPU SM activity", "%", 100.0, std::move(sm));
        add("chart-gpu-memory", "GPU memory", "GPU memory used", "GiB", memory_top, std::move(memory));
        // Power, temperature, SM clock and the clock slowing down: where a GPU throttled, and when
        // (runs recorded before baton stored them have none of these charts).
        std::vector<ChartSeries> power, temperature, clock, slowed;
        for (unsigned g : gpus) {
            const std::string label = fmt::format("GPU{}", g);
            auto keep = [](std::vector<ChartSeries>& into, ChartSeries s) {
                if (!s.values.empty()) into.push_back(std::move(s));
            };
            keep(power, series_of(d, label, [&](const store::RunSample& s) {
                     return gpu_value(s, g, [](const store::RunSample::Gpu& x) { return x.power_watts; });
                 }));
            keep(temperature, series_of(d, label, [&](const store::RunSample& s) {
                     return gpu_value(s, g, [](const store::RunSample::Gpu& x) { return x.temperature_celsius; });
                 }));
            keep(clock, series_of(d, label, [&](const store::RunSample& s) {
                     return gpu_value(s, g, [](const store::RunSample::Gpu& x) { return x.sm_clock_mhz; });
                 }));
            keep(slowed, series_of(d, label, [&](const store::RunSample& s) -> std::optional<double> {
                     for (const store::RunSample::Gpu& x : s.gpus) {
                         if (x.index != g || !x.throttle_reasons) continue;
                         for (const std::string& reason : decode_throttle_reasons(*x.throttle_reasons))
                             if (throttle_reason_slows(reason)) return 1.0;
                         return 0.0;
                     }
                     return std::nullopt;
                 }));
        }
        if (!power.empty()) add("chart-gpu-power", "GPU power", "GPU power draw", "W", std::nullopt, std::move(power));
        if (!temperature.empty())
            add("chart-gpu-temperature", "GPU temp", "GPU temperature", "C", std::nullopt, std::move(temperature));
        if (!clock.empty()) add("chart-gpu-clock", "SM clock", "GPU SM clock", "MHz", std::nullopt, std::move(clock));
        if (!slowed.empty())
            add("chart-gpu-throttled", "GPU slowed",
                "GPU clock slowed (1: power cap, thermal or hardware slowdown active)", "", 1.0, std::move(slowed));
    }
    // The job against the host, both as a share of the whole machine when its CPU count is known.
    const double cpus = r.cpu_count ? static_cast<double>(*r.cpu_count) : 0;
    add("chart-cpu", "CPU",
        cpus > 0 ? "CPU: the job against the host (% of all CPUs)" : "CPU (host: % of all CPUs; job: % of one core)",
        "%", cpus > 0 ? std::optional<double>(100.0) : std::nullopt,
        {series_of(d, "host", [](const store::RunSample& s) { return std::optional<double>(s.cpu_percent); }),
         series_of(d, "job", [&](const store::RunSample& s) {
             return std::optional<double>(cpus > 0 ? s.job_cpu_percent / cpus : s.job_cpu_percent);
         })});
    add("chart-memory", "Memory", "Memory: host used and the job's RSS", "GiB",
        r.memory_total_bytes ? std::optional<double>(static_cast<double>(*r.memory_total_bytes) / kBytesPerGiB)
                             : std::nullopt,
        {series_of(d, "host used",
                   [](const store::RunSample& s) { return std::optional<double>(s.memory_used_bytes / kBytesPerGiB); }),
         series_of(d, "job RSS",
                   [](const store::RunSample& s) { return std::optional<double>(s.job_rss_bytes / kBytesPerGiB); })});
    add("chart-swap", "Swap", "Swap traffic (in + out)", "MB/s", std::nullopt,
        {series_of(d, "swap", [](const store::RunSample& s) {
            return std::optional<double>(s.swap_bytes_per_second / kBytesPerMB);
        })});
    add("chart-iowait", "I/O wait", "I/O wait", "%", std::nullopt,
        {series_of(d, "I/O wait", [](const store::RunSample& s) { return std::optional<double>(s.iowait_percent); })});
    // The hook's steps: time and data wait per step, and throughput, per rank.
    if (!d.steps.empty()) {
        std::map<int, std::vector<const store::StepEvent*>> ranks;
        for (const store::StepEvent& s : d.steps) ranks[s.rank].push_back(&s);
        std::vector<ChartSeries> time, rate;
        for (const auto& [rank, steps] : ranks) {
            const std::string who = ranks.size() > 1 ? fmt::format("rank {} ", rank) : "";
            ChartSeries step{who + "step", {}, {}}, wait{who + "data wait", {}, {}}, samples{who + "samples/s", {}, {}};
            for (const store::StepEvent* s : steps) {
                const double at = offset_s(r, s->t_ms);
                step.t.push_back(at);
                step.values.push_back(s->step_ms);
                wait.t.push_back(at);
                wait.values.push_back(s->wait_ms);
                if (s->samples && s->step_ms > 0) {
                    samples.t.push_back(at);
                    samples.values.push_back(static_cast<double>(*s->samples) * 1000.0 / s->step_ms);
                }
            }
            time.push_back(std::move(step));
            time.push_back(std::move(wait));
            if (!samples.values.empty()) rate.push_back(std::move(samples));
        }
        add("chart-step-time", "Steps", "Training steps: step time and the data wait within it (baton hook)", "ms",
            std::nullopt, std::move(time));
        if (!rate.empty())
            add("chart-throughput", "Throughput", "Throughput (baton hook)", "samples/s", std::nullopt,
                std::move(rate));
    }
    auto mb_per_s = [](const std::optional<double>& bytes_per_second) -> std::optional<double> {
        if (!bytes_per_second) return std::nullopt;
        return *bytes_per_second / kBytesPerMB;
    };
    add("chart-disk", "Disk", "Disk read and write (all disks)", "MB/s", std::nullopt,
        {series_of(d, "read", [&](const store::RunSample& s) { return mb_per_s(s.disk_read_bytes_per_second); }),
         series_of(d, "write", [&](const store::RunSample& s) { return mb_per_s(s.disk_write_bytes_per_second); })});
    return out;
}

double report_duration(const report::RunReportData& d, const RunFigures& f) {
    double t = f.seconds;
    if (!d.samples.empty()) t = std::max(t, offset_s(d.run, d.samples.back().t_ms));
    return std::max(t, 1.0);
}

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1000px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; } td, th { padding: 3px 10px 3px 0; vertical-align: top; text-align: left; }
th { font-weight: 600; color: #555; } code, pre { font: 12.5px ui-monospace, monospace; }
pre { background: #f6f6f6; padding: 10px; overflow-x: auto; white-space: pre-wrap; }
.critical { color: #c0392b; } .warning { color: #d35400; } .info { color: #2e86c1; }
.sev { font-weight: 700; text-transform: uppercase; font-size: 12px; }
svg.chart { width: 100%; height: auto; margin: 10px 0 4px; }
svg .title { font-size: 13px; font-weight: 600; fill: #333; } svg .legend, svg .axis { font-size: 11px; fill: #555; }
svg .grid { stroke: #e4e4e4; } svg .series { fill: none; stroke-width: 1.4; stroke-linejoin: round; }
svg .mark line { stroke-dasharray: 4 3; stroke-width: 1.2; } svg .mark text { font-size: 11px; font-weight: 700; }
.none { color: #1e8449; } footer { margin-top: 32px; color: #888; font-size: 12px; }
svg.step-bars { display: block; margin: 8px 0 2px; } p.legend { font-size: 11px; color: #555; }
p.legend span { margin-right: 10px; } p.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 3px; }
)";

std::string html_rows(const Rows& rows) {
    std::string o = "<table class=\"facts\">\n";
    for (const auto& [k, v] : rows)
        o += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", html_escape(k), html_escape(v));
    return o + "</table>\n";
}

}  // namespace

// Each rank's last steps before the first hang verdict was said: how the ranks stopped.
struct RankLastSteps {
    int rank = 0;
    std::int64_t step = 0, t_ms = 0;
    std::vector<double> step_ms;  // its last five, oldest first
};
std::vector<RankLastSteps> last_steps(const std::vector<store::StepEvent>& steps, std::int64_t until_ms) {
    std::map<int, RankLastSteps> by;
    for (const store::StepEvent& e : steps) {  // in time order
        if (e.t_ms > until_ms) continue;
        RankLastSteps& r = by[e.rank];
        r.rank = e.rank;
        r.step = e.step;
        r.t_ms = e.t_ms;
        r.step_ms.push_back(e.step_ms);
        if (r.step_ms.size() > 5) r.step_ms.erase(r.step_ms.begin());
    }
    std::vector<RankLastSteps> out;
    for (auto& [rank, r] : by) out.push_back(std::move(r));
    return out;
}

// The rows of that timeline: rank, last step, when, how long before the verdict, the last steps' times.
std::vector<std::vector<std::string>> hang_step_rows(const report::RunReportData& d) {
    std::vector<std::vector<std::string>> rows;
    if (d.hangs.empty()) return rows;
    const std::int64_t said = d.hangs.front().t_ms;
    for (const RankLastSteps& r : last_steps(d.steps, said)) {
        std::string times;
        for (double ms : r.step_ms) times += (times.empty() ? "" : ", ") + fmt::format("{:.0f}", ms);
        rows.push_back({std::to_string(r.rank), std::to_string(r.step), rfc3339_utc(r.t_ms).substr(11, 12),
                        fmt::format("{:.1f} s", static_cast<double>(said - r.t_ms) / 1000.0), times});
    }
    return rows;
}
constexpr const char* kHangColumns[] = {"rank", "last step", "at (UTC)", "before the verdict", "its last steps (ms)"};

std::string run_report_html(const report::RunReportData& d, const StepSection* step) {
    const store::RunRecord& r = d.run;
    const RunFigures f = run_figures(r, d.samples, d.findings, d.steps);
    std::string o =
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        // No request of any kind: everything is in this file.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    o += fmt::format("<title>baton run {}: {}</title>\n<style>{}</style>\n</head>\n<body>\n", r.id, html_escape(r.name),
                     kStyle);
    o += fmt::format("<header><h1>Run {}: {}</h1>\n<p>{} · {} · started {}</p></header>\n", r.id, html_escape(r.name),
                     html_escape(state_text(r)), duration_text(f.seconds), rfc3339_utc(r.start_ms));
    o += "<section id=\"run\">\n" + html_rows(run_rows(d)) + "</section>\n";

    o += "<section id=\"findings\">\n<h2>Findings</h2>\n";
    if (d.findings.empty()) {
        o += "<p class=\"none\">No findings: nothing that baton watches held this run back.</p>\n";
    } else {
        o +=
            "<table class=\"findings\">\n<tr><th>#</th><th>at</th><th>severity</th><th>finding</th><th>fix</th></tr>\n";
        for (std::size_t i = 0; i < d.findings.size(); ++i) {
            const store::RecordedFinding& x = d.findings[i];
            o += fmt::format(
                "<tr class=\"finding\" data-rule=\"{0}\"><td>{1}</td><td>+{2}<br><small>{3}</small></td>"
                "<td class=\"sev {4}\">{4}</td><td><code>{0}</code> [{5}]<br>{6}</td><td>{7}</td></tr>\n",
                html_escape(x.rule), i + 1, clock_offset(offset_s(r, x.t_ms)), rfc3339_utc(x.t_ms).substr(11, 8),
                html_escape(x.severity), html_escape(x.subject), html_escape(x.summary), html_escape(x.recommendation));
        }
        o += "</table>\n";
    }
    o += "</section>\n";

    if (!d.hangs.empty()) {
        // The last verdict said, whole (the ranks' grouped stacks), and how each rank's steps stopped.
        const store::RecordedHang& h = d.hangs.back();
        o += fmt::format("<section id=\"hang\">\n<h2>Hang</h2>\n<p><code>{}</code> at +{} ({}){}</p>\n",
                         html_escape(h.rule), clock_offset(offset_s(r, h.t_ms)), rfc3339_utc(h.t_ms).substr(11, 8),
                         d.hangs.size() > 1 ? fmt::format(": the last of {} verdicts", d.hangs.size()) : std::string());
        o += "<pre class=\"hang\">" + html_escape(h.text) + "</pre>\n";
        const auto rows = hang_step_rows(d);
        if (rows.empty()) {
            o += "<p>No step of the Python hook before the first verdict: judged from the stacks and CPU alone.</p>\n";
        } else {
            o += "<table class=\"hang-steps\">\n<tr>";
            for (const char* c : kHangColumns) o += fmt::format("<th>{}</th>", c);
            o += "</tr>\n";
            for (const auto& row : rows) {
                o += "<tr>";
                for (const std::string& cell : row) o += "<td>" + html_escape(cell) + "</td>";
                o += "</tr>\n";
            }
            o += "</table>\n";
        }
        o += "</section>\n";
    }

    if (step) append_step_section_html(*step, r.id, o);
    if (has_memory_section(d)) append_memory_section_html(d, o);

    o += "<section id=\"summary\">\n<h2>Summary</h2>\n";
    if (!f.gpus.empty()) {
        o += "<table class=\"gpus\">\n<tr>";
        for (const char* h : kGpuColumns) o += fmt::format("<th>{}</th>", h);
        o += "</tr>\n";
        for (const auto& row : gpu_rows(f)) {
            o += "<tr>";
            for (const std::string& cell : row) o += "<td>" + html_escape(cell) + "</td>";
            o += "</tr>\n";
        }
        o += "</table>\n";
    }
    o += html_rows(figure_rows(f));
    if (!r.summary.empty())
        o += "<details><summary>As printed at the end of the run</summary>\n<pre>" + html_escape(r.summary) +
             "</pre></details>\n";
    o += "</section>\n";

    o += "<section id=\"charts\">\n<h2>Over time</h2>\n";
    if (gpu_indices(d.samples).empty()) o += "<p>No GPU was seen during this run.</p>\n";
    for (const Chart& c : charts(d, report_duration(d, f))) o += render_chart_svg(c);
    o += "</section>\n";
    o += "<footer>Written by <code>baton report</code> from the run's history; the finding ids are explained in "
         "baton's docs/findings.md.</footer>\n</body>\n</html>\n";
    return o;
}

std::string run_report_markdown(const report::RunReportData& d, const StepSection* step) {
    const store::RunRecord& r = d.run;
    const RunFigures f = run_figures(r, d.samples, d.findings, d.steps);
    std::string o = fmt::format("# Run {}: {}\n\n| | |\n|---|---|\n", r.id, markdown_cell(r.name));
    for (const auto& [k, v] : run_rows(d)) o += fmt::format("| {} | {} |\n", k, markdown_cell(v));
    o += "\n## Findings\n\n";
    if (d.findings.empty()) o += "No findings: nothing that baton watches held this run back.\n";
    for (std::size_t i = 0; i < d.findings.size(); ++i) {
        const store::RecordedFinding& x = d.findings[i];
        o += fmt::format("{}. **{}** `{}` [{}] at +{}: {}  \n   Fix: {}\n", i + 1, markdown_text(x.severity),
                         markdown_text(x.rule), markdown_text(x.subject), clock_offset(offset_s(r, x.t_ms)),
                         markdown_text(x.summary), markdown_text(x.recommendation));
    }
    if (!d.hangs.empty()) {
        const store::RecordedHang& h = d.hangs.back();
        o +=
            fmt::format("\n## Hang\n\n`{}` at +{}{}:\n\n", markdown_text(h.rule), clock_offset(offset_s(r, h.t_ms)),
                        d.hangs.size() > 1 ? fmt::format(" (the last of {} verdicts)", d.hangs.size()) : std::string());
        // An indented code block: nothing in the text (paths, function names) can end it or be markup.
        std::size_t at = 0;
        while (at < h.text.size()) {
            const std::size_t nl = h.text.find('\n', at);
            const std::size_t end = nl == std::string::npos ? h.text.size() : nl;
            o += "    " + printable(h.text.substr(at, end - at)) + "\n";
            at = end + 1;
        }
        const auto rows = hang_step_rows(d);
        if (!rows.empty()) {
            o += "\n|";
            for (const char* c : kHangColumns) o += fmt::format(" {} |", c);
            o += "\n|---|---|---|---|---|\n";
            for (const auto& row : rows) {
                o += "|";
                for (const std::string& cell : row) o += " " + markdown_cell(cell) + " |";
                o += "\n";
            }
        }
    }
    if (step) append_step_section_markdown(*step, r.id, o);
    if (has_memory_section(d)) append_memory_section_markdown(d, o);
    o += "\n## Summary\n\n";
    if (!f.gpus.empty()) {
        std::string header = "|", rule = "|";
        for (const char* h : kGpuColumns) {
            header += fmt::format(" {} |", h);
            rule += "---|";
        }
        o += header + "\n" + rule + "\n";
        for (const auto& row : gpu_rows(f)) {
            o += "|";
            for (const std::string& cell : row) o += " " + markdown_cell(cell) + " |";
            o += "\n";
        }
        o += "\n";
    }
    o += "| | |\n|---|---|\n";
    for (const auto& [k, v] : figure_rows(f)) o += fmt::format("| {} | {} |\n", k, markdown_cell(v));
    o += fmt::format("\n## Over time\n\nEach line spans the run ({}), scaled to the chart's top.\n\n```\n",
                     duration_text(f.seconds));
    for (const Chart& c : charts(d, report_duration(d, f))) {
        double top = c.y_max.value_or(0);
        if (!c.y_max)
            for (const ChartSeries& s : c.series)
                for (double v : s.values) top = std::max(top, v);
        for (const ChartSeries& s : c.series) {
            if (s.values.empty()) continue;
            // "I/O wait", not "I/O wait I/O wait": the chart's name once when the series repeats it.
            const std::string label =
                s.label == c.name || s.label.rfind(c.name, 0) == 0 ? s.label : c.name + " " + s.label;
            o += fmt::format("{:<22} {} (top {} {})\n", label, sparkline(s, 60, top), number_text(top), c.unit);
        }
    }
    o += "```\n";
    return o;
}

Result<std::string> recorded_run_report(store::History& h, std::int64_t run, bool markdown) {
    Result<store::StoredRun> d = h.run_reads().load_run(run);
    if (!d.ok()) return d.error();
    // (none when it has no window, or when an older history cannot say)
    Result<std::vector<store::RecordedProfile>> windows = h.run_reads().profiles(run);
    const std::optional<StepSection> step = windows.ok() ? step_section(*windows) : std::nullopt;
    return markdown ? run_report_markdown(*d, step ? &*step : nullptr) : run_report_html(*d, step ? &*step : nullptr);
}

Status write_html_report(store::History& h, std::int64_t run, const std::string& path) {
    Result<std::string> html = recorded_run_report(h, run, false);
    if (!html.ok()) return html.error();
    return write_file(path, *html);
}

}  // namespace baton::report
