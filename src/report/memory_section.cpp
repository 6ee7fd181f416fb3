#include "report/memory_section.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/units.hpp"
#include "gpu_memory/oom_autopsy.hpp"
#include "report/markdown_text.hpp"
#include "report/svg_chart.hpp"
#include "store/hook_event.hpp"

namespace baton::report {

namespace {

using gpu_memory::MemoryUse;

// One part of the GPU at the failure, in the bar's order.
struct Part {
    std::string label;
    double bytes = 0;
    const char* colour = "";
};

struct Breakdown {
    const store::RecordedFinding* finding = nullptr;  // the last cuda_oom record
    std::vector<Part> parts;
    std::optional<double> capacity;
    std::vector<std::pair<std::string, double>> sites;  // "train.py:42 in forward (activations)", bytes
};

constexpr const char* kUseColours[] = {"#1f77b4", "#17becf", "#9467bd", "#2ca02c", "#d62728", "#8c564b"};

std::optional<double> figure(const store::RecordedFinding& f, const std::string& metric) {
    for (const diagnose::Evidence& e : f.evidence)
        if (e.metric == metric && e.maximum) return *e.maximum;
    return std::nullopt;
}

Breakdown breakdown_of(const store::StoredRun& d) {
    Breakdown b;
    for (const store::RecordedFinding& f : d.findings)
        if (f.rule == "cuda_oom") b.finding = &f;
    if (!b.finding) return b;
    const store::RecordedFinding& f = *b.finding;
    b.capacity = figure(f, "oom.capacity_bytes");
    for (std::size_t i = 0; i < EnumNames<MemoryUse>::list.size(); ++i) {
        const auto u = static_cast<MemoryUse>(i);
        if (const auto v = figure(f, fmt::format("oom.{}_bytes", enum_name(u))); v && *v > 0)
            b.parts.push_back({gpu_memory::memory_use_label(u), *v, kUseColours[i]});
    }
    // Without a breakdown the allocated memory is one part.
    if (b.parts.empty())
        if (const auto allocated = figure(f, "oom.allocated_bytes"))
            b.parts.push_back({"allocated", *allocated, "#7f7f7f"});
    if (const auto v = figure(f, "oom.reserved_unallocated_bytes"); v && *v > 0)
        b.parts.push_back({"reserved, unallocated", *v, "#ff7f0e"});
    if (const auto v = figure(f, "oom.other_processes_bytes"); v && *v > 0)
        b.parts.push_back({"other processes", *v, "#e377c2"});
    if (const auto v = figure(f, "oom.free_bytes"); v && *v > 0) b.parts.push_back({"free", *v, "#e5e5e5"});
    for (const diagnose::Evidence& e : f.evidence)
        if (e.metric == "oom.site_bytes" && e.maximum) b.sites.emplace_back(e.threshold, *e.maximum);
    return b;
}

// The steps' allocator figures over the run, and the job's GPUs' memory as NVML saw it (GiB).
std::vector<ChartSeries> memory_series(const store::StoredRun& d) {
    std::map<int, std::array<ChartSeries, 3>> ranks;
    for (const store::StepEvent& s : d.steps) {
        const std::optional<store::AllocatorFigures> c = store::parse_allocator_figures(s.data);
        if (!c) continue;
        auto& r = ranks[s.rank];
        const double at = static_cast<double>(s.t_ms - d.run.start_ms) / 1000.0;
        const double values[3] = {static_cast<double>(c->allocated), static_cast<double>(c->peak_allocated),
                                  static_cast<double>(c->reserved)};
        for (int i = 0; i < 3; ++i) {
            r[i].t.push_back(at);
            r[i].values.push_back(values[i] / kBytesPerGiB);
        }
    }
    std::vector<ChartSeries> out;
    for (auto& [rank, r] : ranks) {
        const std::string who = ranks.size() > 1 ? fmt::format("rank {} ", rank) : "";
        r[0].label = who + "allocated at step end";
        r[1].label = who + "step peak";
        r[2].label = who + "reserved";
        for (ChartSeries& s : r) out.push_back(std::move(s));
    }
    std::map<unsigned, ChartSeries> gpus;
    for (const store::RunSample& s : d.samples)
        for (const store::RunSample::Gpu& g : s.gpus) {
            ChartSeries& c = gpus[g.index];
            c.label = fmt::format("GPU{} used (NVML)", g.index);
            c.t.push_back(static_cast<double>(s.t_ms - d.run.start_ms) / 1000.0);
            c.values.push_back(g.memory_used_bytes / kBytesPerGiB);
        }
    if (!out.empty())
        for (auto& [index, c] : gpus) out.push_back(std::move(c));
    return out;
}

std::string size_text(double bytes) {
    return gpu_memory::torch_size(bytes);
}

std::string bar_svg(const Breakdown& b) {
    double total = 0;
    for (const Part& p : b.parts) total += p.bytes;
    const double scale = std::max(total, b.capacity.value_or(0));
    if (scale <= 0) return "";
    const int width = 700, height = 22;
    std::string o = fmt::format(
        "<svg class=\"memory-bar\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">\n",
        width, height + 2);
    double x = 0;
    for (const Part& p : b.parts) {
        const double w = p.bytes / scale * width;
        o += fmt::format(
            "<rect x=\"{:.1f}\" y=\"1\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>\n", x,
            w, height, p.colour, html_escape(p.label), size_text(p.bytes));
        x += w;
    }
    o += "</svg>\n<p class=\"legend\">";
    for (const Part& p : b.parts)
        o += fmt::format("<span><i style=\"background:{}\"></i>{} {}</span>", p.colour, html_escape(p.label),
                         size_text(p.bytes));
    return o + "</p>\n";
}

}  // namespace

bool has_memory_section(const store::StoredRun& d) {
    for (const store::RecordedFinding& f : d.findings)
        if (f.rule == "cuda_oom") return true;
    for (const store::StepEvent& s : d.steps)
        if (store::parse_allocator_figures(s.data)) return true;
    return false;
}

void append_memory_section_html(const store::StoredRun& d, std::string& o) {
    o += "<section id=\"memory\">\n<h2>Memory</h2>\n";
    const std::vector<ChartSeries> series = memory_series(d);
    if (!series.empty()) {
        Chart c;
        c.id = "chart-cuda-memory";
        c.name = "CUDA memory";
        c.title = "CUDA allocator at each step's end (baton hook) and the GPU's memory (NVML)";
        c.unit = "GiB";
        double end = 1;
        for (const ChartSeries& s : series)
            if (!s.t.empty()) end = std::max(end, s.t.back());
        c.duration = end;
        c.series = series;
        o += render_chart_svg(c);
    }
    const Breakdown b = breakdown_of(d);
    if (b.finding) {
        o += fmt::format("<h3>At the out-of-memory error</h3>\n<p>{}{}</p>\n", html_escape(b.finding->summary),
                         b.capacity ? fmt::format(" (the bar: the GPU's {})", size_text(*b.capacity)) : std::string());
        o += bar_svg(b);
        if (!b.sites.empty()) {
            o += "<table class=\"memory-sites\">\n<tr><th>allocated at</th><th>live</th></tr>\n";
            for (const auto& [where, bytes] : b.sites)
                o +=
                    fmt::format("<tr><td><code>{}</code></td><td>{}</td></tr>\n", html_escape(where), size_text(bytes));
            o += "</table>\n";
        }
        o += "<p><b>Fix:</b> " + html_escape(b.finding->recommendation) + "</p>\n";
    }
    o += "</section>\n";
}

void append_memory_section_markdown(const store::StoredRun& d, std::string& o) {
    o += "\n## Memory\n\n";
    const std::vector<ChartSeries> series = memory_series(d);
    if (!series.empty()) {
        double top = 0;
        for (const ChartSeries& s : series)
            for (double v : s.values) top = std::max(top, v);
        o += "CUDA allocator at each step's end (baton hook) and the GPU's memory (NVML), scaled to " +
             number_text(top) + " GiB:\n\n```\n";
        for (const ChartSeries& s : series) o += fmt::format("{:<28} {}\n", s.label, sparkline(s, 60, top));
        o += "```\n";
    }
    const Breakdown b = breakdown_of(d);
    if (!b.finding) return;
    o += "\n### At the out-of-memory error\n\n" + markdown_text(b.finding->summary) + "\n\n";
    double total = 0;
    for (const Part& p : b.parts) total += p.bytes;
    const double scale = std::max(total, b.capacity.value_or(0));
    if (!b.parts.empty() && scale > 0) {
        o += "| part of the GPU | size | share |\n|---|---|---|\n";
        for (const Part& p : b.parts)
            o += fmt::format("| {} | {} | {:.0f} % |\n", p.label, size_text(p.bytes), 100 * p.bytes / scale);
    }
    if (!b.sites.empty()) {
        o += "\n| allocated at | live |\n|---|---|\n";
        for (const auto& [where, bytes] : b.sites)
            o += fmt::format("| `{}` | {} |\n", markdown_cell(where), size_text(bytes));
    }
    o += "\nFix: " + markdown_text(b.finding->recommendation) + "\n";
}

}  // namespace baton::report
