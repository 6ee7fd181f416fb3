#include "report/step_section.hpp"

#include <algorithm>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "profile/trace_events.hpp"
#include "report/svg_chart.hpp"

namespace baton::report {

namespace {

using profile::GpuSlice;
using profile::HostPhase;

// One colour a slice, the idle ones greys (what the eye should skip is the idle, and see it).
constexpr const char* kGpuColours[profile::kGpuSlices] = {"#1f77b4", "#17becf", "#9467bd", "#2ca02c", "#98df8a",
                                                          "#8c564b", "#d62728", "#ff7f0e", "#ffbb78", "#e377c2",
                                                          "#bcbd22", "#c7c7c7", "#e5e5e5", "#a0a0a0"};
constexpr const char* kHostColours[profile::kHostPhases] = {"#d62728", "#ff7f0e", "#9467bd", "#2ca02c",
                                                            "#e377c2", "#1f77b4", "#c7c7c7"};

struct Bar {
    std::string label;
    std::vector<std::pair<double, int>> parts;  // (us, colour index)
};

// Rows of stacked bars, each scaled to the longest row.
std::string bars_svg(const std::vector<Bar>& rows, const char* const* colours, std::size_t ncolours) {
    double longest = 0;
    for (const Bar& b : rows) {
        double sum = 0;
        for (const auto& [us, c] : b.parts) sum += us;
        longest = std::max(longest, sum);
    }
    const int label_w = 110, bar_w = 600, row_h = 16;
    std::string o = fmt::format(
        "<svg class=\"step-bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">\n",
        label_w + bar_w + 70, static_cast<int>(rows.size()) * row_h + 4);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const int y = static_cast<int>(r) * row_h + 2;
        o += fmt::format("<text x=\"0\" y=\"{}\" font-size=\"11\">{}</text>\n", y + 11, html_escape(rows[r].label));
        double x = label_w, sum = 0;
        for (const auto& [us, c] : rows[r].parts) {
            if (us <= 0 || longest <= 0) continue;
            const double w = us / longest * bar_w;
            o += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>\n", x, y, w,
                             row_h - 3, colours[static_cast<std::size_t>(c) % ncolours]);
            x += w;
            sum += us;
        }
        o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\">{:.2f} ms</text>\n", x + 4, y + 11, sum / 1000);
    }
    return o + "</svg>\n";
}

// One step as lanes: the host's phases, each GPU stream's activities, on one time axis.
std::string timeline_svg(const profile::Timeline& tl) {
    const int label_w = 110, width = 600, lane_h = 16;
    const double scale = tl.dur_us > 0 ? width / tl.dur_us : 0;
    std::string o = fmt::format(
        "<svg class=\"step-timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
        "role=\"img\">\n",
        label_w + width + 10, static_cast<int>(tl.lanes.size()) * lane_h + 18);
    for (std::size_t l = 0; l < tl.lanes.size(); ++l) {
        const profile::TimelineLane& lane = tl.lanes[l];
        const int y = static_cast<int>(l) * lane_h + 2;
        o += fmt::format("<text x=\"0\" y=\"{}\" font-size=\"11\">{}</text>\n", y + 11, html_escape(lane.name));
        o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f7f7f7\"/>\n", label_w, y, width,
                         lane_h - 3);
        for (const profile::Piece& p : lane.pieces) {
            const int label = p.label < 0 ? static_cast<int>(profile::HostPhase::other) : p.label;
            const char* colour = lane.gpu ? kGpuColours[static_cast<std::size_t>(label) % profile::kGpuSlices]
                                          : kHostColours[static_cast<std::size_t>(label) % profile::kHostPhases];
            o += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"/>\n",
                             label_w + (p.start - tl.start_us) * scale, y, std::max(0.3, (p.end - p.start) * scale),
                             lane_h - 3, colour);
        }
    }
    o += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\">0</text><text x=\"{}\" y=\"{}\" "
        "font-size=\"11\" text-anchor=\"end\">{:.2f} ms</text>\n",
        label_w, static_cast<int>(tl.lanes.size()) * lane_h + 14, label_w + width,
        static_cast<int>(tl.lanes.size()) * lane_h + 14, tl.dur_us / 1000);
    return o + "</svg>\n";
}

std::string legend(const char* const* colours, std::size_t n, const char* (*name)(std::size_t)) {
    std::string o = "<p class=\"legend\">";
    for (std::size_t i = 0; i < n; ++i)
        o += fmt::format("<span><i style=\"background:{}\"></i>{}</span> ", colours[i], name(i));
    return o + "</p>\n";
}

const char* gpu_name(std::size_t i) {
    return enum_name(static_cast<GpuSlice>(i));
}
const char* host_name(std::size_t i) {
    return enum_name(static_cast<HostPhase>(i));
}

std::string mean_step_text(const profile::Analysis& a) {
    return a.steps.empty() ? "no step"
                           : fmt::format("{:.2f} ms", a.step_us() / static_cast<double>(a.steps.size()) / 1000);
}

}  // namespace

std::optional<StepSection> step_section(const std::vector<store::RecordedProfile>& windows) {
    if (windows.empty()) return std::nullopt;
    StepSection s;
    const store::RecordedProfile& w = windows.back();
    s.rank = w.rank;
    s.t_ms = w.t_ms;
    s.windows = windows.size();
    Result<profile::Trace> t = profile::parse_trace_bytes(w.trace_gz);
    if (t.ok())
        s.analysis = profile::analyse(*t);
    else
        s.error = t.error().message;
    return s;
}

void append_step_section_html(const StepSection& s, std::int64_t run_id, std::string& o) {
    const profile::Analysis& a = s.analysis;
    o += "<section id=\"step\">\n<h2>Step</h2>\n";
    if (!s.error.empty()) {
        o += "<p>The profiler window kept with this run could not be read: " + html_escape(s.error) +
             "</p>\n</section>\n";
        return;
    }
    o += fmt::format(
        "<p>Rank {}'s profiler window (<code>baton run --profile</code>): {} step{}, {} on average; "
        "<code>baton profile show {}</code> prints it whole{}.</p>\n",
        s.rank, a.steps.size(), a.steps.size() == 1 ? "" : "s", mean_step_text(a), run_id,
        s.windows > 1 ? fmt::format(" (the last of {} windows)", s.windows) : std::string());
    for (std::size_t d = 0; d < a.devices.size(); ++d) {
        std::vector<Bar> rows;
        for (const profile::Step& st : a.steps) {
            Bar b{fmt::format("GPU{} #{}", a.devices[d], st.number), {}};
            for (std::size_t i = 0; i < profile::kGpuSlices; ++i)
                b.parts.emplace_back(st.gpus[d].us[i], static_cast<int>(i));
            rows.push_back(std::move(b));
        }
        o += bars_svg(rows, kGpuColours, profile::kGpuSlices);
    }
    if (!a.devices.empty()) o += legend(kGpuColours, profile::kGpuSlices, gpu_name);
    std::vector<Bar> host;
    for (const profile::Step& st : a.steps) {
        Bar b{fmt::format("host #{}", st.number), {}};
        for (std::size_t i = 0; i < profile::kHostPhases; ++i) b.parts.emplace_back(st.host.us[i], static_cast<int>(i));
        host.push_back(std::move(b));
    }
    o += bars_svg(host, kHostColours, profile::kHostPhases);
    o += legend(kHostColours, profile::kHostPhases, host_name);
    if (!a.timeline.lanes.empty()) {
        o += fmt::format("<p>Step #{} (of median duration), host thread and GPU streams as lanes:</p>\n",
                         a.timeline.step);
        o += timeline_svg(a.timeline);
    }
    const double n = static_cast<double>(std::max<std::size_t>(1, a.steps.size()));
    if (!a.kernels.empty()) {
        o += "<table class=\"kernels\">\n<tr><th>ms a step</th><th>a step</th><th>class</th><th>kernel</th></tr>\n";
        for (std::size_t i = 0; i < std::min<std::size_t>(10, a.kernels.size()); ++i) {
            const profile::TopKernel& k = a.kernels[i];
            std::string kind = enum_name(k.kind);
            if (k.precision != profile::GemmPrecision::unknown) kind += std::string(" ") + enum_name(k.precision);
            o += fmt::format("<tr><td>{:.3f}</td><td>{:.1f}</td><td>{}</td><td><code>{}</code></td></tr>\n",
                             k.us / n / 1000, static_cast<double>(k.count) / n, kind,
                             html_escape(k.name.substr(0, 200)));
        }
        o += "</table>\n";
    }
    if (!a.syncs.empty()) {
        o += std::string("<table class=\"syncs\">\n<tr><th>a step</th><th>GPU idle ms a step</th><th>") +
             (a.has_gpu ? "where the host waited for the GPU"
                        : "where the host would wait for a GPU (scalar reads: no GPU in this trace)") +
             "</th></tr>\n";
        for (const profile::SyncSite& y : a.syncs) {
            std::string what = y.op.empty() ? y.call : y.op;
            if (!y.call.empty() && !y.op.empty()) what += " (" + y.call + ")";
            o += fmt::format("<tr><td>{:.1f}</td><td>{:.2f}</td><td><code>{}</code>{}</td></tr>\n",
                             static_cast<double>(y.count) / n, y.gpu_idle_us / n / 1000, html_escape(what),
                             y.where.empty() ? "" : " at <code>" + html_escape(y.where) + "</code>");
        }
        o += "</table>\n";
    }
    o += "</section>\n";
}

void append_step_section_markdown(const StepSection& s, std::int64_t run_id, std::string& o) {
    const profile::Analysis& a = s.analysis;
    o += "\n## Step\n\n";
    if (!s.error.empty()) {
        o += "The profiler window kept with this run could not be read: " + s.error + "\n";
        return;
    }
    o += fmt::format("Rank {}'s profiler window: {} step(s), {} on average (`baton profile show {}`).\n\n", s.rank,
                     a.steps.size(), mean_step_text(a), run_id);
    const double step = a.steps.empty() ? 0 : a.step_us() / static_cast<double>(a.steps.size());
    auto share = [&](double us) { return step > 0 ? 100 * us / step : 0.0; };
    o += "| where | ms a step | share |\n|---|---|---|\n";
    for (int device : a.devices) {
        const profile::GpuStep g = a.mean_gpu(device);
        for (std::size_t i = 0; i < profile::kGpuSlices; ++i)
            if (g.us[i] > 0)
                o += fmt::format("| GPU{} {} | {:.2f} | {:.0f} % |\n", device, gpu_name(i), g.us[i] / 1000,
                                 share(g.us[i]));
    }
    const profile::HostStep h = a.mean_host();
    for (std::size_t i = 0; i < profile::kHostPhases; ++i)
        if (h.us[i] > 0)
            o += fmt::format("| host {} | {:.2f} | {:.0f} % |\n", host_name(i), h.us[i] / 1000, share(h.us[i]));
}

}  // namespace baton::report
