#include "report/svg_chart.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

namespace baton::report {

namespace {

// The drawing area, in SVG user units (the SVG scales to the page's width). The plot starts below
// the title and as many legend rows as the series need.
constexpr double kWidth = 960;
constexpr double kMinLeft = 52, kRight = 12, kBottom = 24, kLegendRow = 14;
constexpr double kPlotH = 146;
constexpr double kCharWidth = 6.5;  // about, at the axis labels' 11 px

// Dash patterns that tell apart series drawn on top of each other.
constexpr const char* kDashes[] = {"6 3", "2 3", "8 3 2 3", "1 5", "10 4", "4 2 1 2", "3 6"};

// Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
constexpr const char* kPalette[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                    "#56b4e9", "#d55e00", "#7f7f7f", "#000000"};

const char* severity_colour(const std::string& s) {
    if (s == "critical") return "#c0392b";
    if (s == "warning") return "#e67e22";
    return "#2e86c1";
}

// The smallest of 1, 2, 2.5, 5 x 10^k at or above v.
double nice_ceiling(double v) {
    if (!(v > 0)) return 1;
    const double e = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * e >= v * (1 - 1e-9)) return m * e;
    return 10 * e;
}

// A step for the x axis that gives at most eight labels.
double time_step(double duration) {
    for (double s : {1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0,
                     21600.0, 43200.0, 86400.0})
        if (duration / s <= 8) return s;
    return nice_ceiling(duration / 8);
}

// The series' points, averaged over equal runs of samples when there are too many.
struct Points {
    std::vector<double> t, v;
    std::size_t per_point = 1;
};

Points reduce(const ChartSeries& s) {
    Points p;
    const std::size_t n = std::min(s.t.size(), s.values.size());
    if (n <= kMaxChartPoints) {
        p.t.assign(s.t.begin(), s.t.begin() + static_cast<std::ptrdiff_t>(n));
        p.v.assign(s.values.begin(), s.values.begin() + static_cast<std::ptrdiff_t>(n));
        return p;
    }
    p.per_point = (n + kMaxChartPoints - 1) / kMaxChartPoints;
    for (std::size_t i = 0; i < n; i += p.per_point) {
        const std::size_t end = std::min(n, i + p.per_point);
        double t = 0, v = 0;
        for (std::size_t j = i; j < end; ++j) {
            t += s.t[j];
            v += s.values[j];
        }
        const auto k = static_cast<double>(end - i);
        p.t.push_back(t / k);
        p.v.push_back(v / k);
    }
    return p;
}

}  // namespace

std::string clock_offset(double seconds) {
    const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
    if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string number_text(double v) {
    if (std::abs(v) >= 100 || v == std::floor(v)) return fmt::format("{:.0f}", v);
    return fmt::format("{:.3g}", v);
}

std::string html_escape(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out.push_back(c);
        }
    }
    return out;
}

std::string render_chart_svg(const Chart& c) {
    std::vector<Points> points;
    double top = 0;
    std::size_t samples = 0;
    std::vector<double> all;
    for (const ChartSeries& s : c.series) {
        points.push_back(reduce(s));
        for (double v : points.back().v) {
            top = std::max(top, v);
            all.push_back(v);
        }
        samples = std::max(samples, std::min(s.t.size(), s.values.size()));
    }
    // Scaled to the bulk of the data: a few points far above the rest (one slow first step of
    // 1.4 s among 60 ms steps) would flatten everything else. They are drawn at the top edge,
    // marked, and counted in a note.
    double scale_top = top;
    if (!c.y_max && all.size() >= 20) {
        std::vector<double> sorted = all;
        std::sort(sorted.begin(), sorted.end());
        const double p99 = sorted[static_cast<std::size_t>(0.99 * static_cast<double>(sorted.size() - 1))];
        if (p99 > 0 && top > 2.5 * p99) scale_top = p99 * 1.2;
    }
    const double y_max = c.y_max.value_or(nice_ceiling(scale_top));
    const double duration = c.duration > 0 ? c.duration : 1;
    // The left margin fits the longest y label ("1000 samples/s" was clipped to "amples/s").
    std::size_t longest = 0;
    for (double f : {0.0, 0.5, 1.0}) longest = std::max(longest, (number_text(f * y_max) + " " + c.unit).size());
    const double left = std::max(kMinLeft, kCharWidth * static_cast<double>(longest) + 10);
    const double plot_w = kWidth - left - kRight;
    // A series with the same values as an earlier one would hide under it: dashed, and said.
    std::vector<int> same_as(c.series.size(), -1);
    for (std::size_t i = 1; i < c.series.size(); ++i)
        for (std::size_t j = 0; j < i && same_as[i] < 0; ++j)
            if (!c.series[i].values.empty() && c.series[i].values == c.series[j].values &&
                c.series[i].t == c.series[j].t)
                same_as[i] = same_as[j] >= 0 ? same_as[j] : static_cast<int>(j);

    // Legend: left to right under the title, wrapping (about 6.5 units per character at 11 px).
    std::string legend;
    double lx = left, ly = 34;
    for (std::size_t i = 0; i < c.series.size(); ++i) {
        const std::string label =
            c.series[i].label +
            (same_as[i] >= 0 ? " (= " + c.series[static_cast<std::size_t>(same_as[i])].label + ", dashed)" : "");
        const double w = kCharWidth * static_cast<double>(label.size()) + 30;
        if (lx + w > kWidth - kRight && lx > left) {
            lx = left;
            ly += kLegendRow;
        }
        legend += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"4\" fill=\"{}\"/><text class=\"legend\" "
            "x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
            lx, ly - 5, kPalette[i % std::size(kPalette)], lx + 16, ly, html_escape(label));
        lx += w;
    }
    const double plot_top = (c.series.empty() ? 24 : ly) + 16;  // room for the marks' numbers
    const double height = plot_top + kPlotH + kBottom;
    auto x_of = [&](double t) { return left + std::clamp(t / duration, 0.0, 1.0) * plot_w; };
    auto y_of = [&](double v) { return plot_top + kPlotH - std::clamp(v / y_max, 0.0, 1.0) * kPlotH; };

    std::string o = fmt::format(
        "<svg class=\"chart\" id=\"{}\" data-samples=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
        "xmlns=\"http://www.w3.org/2000/svg\">\n<title>{}</title>\n",
        html_escape(c.id), samples, kWidth, height, html_escape(c.title));
    o += fmt::format("<text class=\"title\" x=\"{}\" y=\"16\">{}</text>\n", left, html_escape(c.title));
    o += legend;
    // Grid: y at 0, half and the top; x at round times.
    for (double f : {0.0, 0.5, 1.0}) {
        const double y = y_of(f * y_max);
        o += fmt::format(
            "<line class=\"grid\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/><text class=\"axis\" x=\"{}\" "
            "y=\"{:.1f}\" text-anchor=\"end\">{} {}</text>\n",
            left, y, left + plot_w, y, left - 4, y + 4, number_text(f * y_max), html_escape(c.unit));
    }
    const double step = time_step(duration);
    for (double t = 0; t <= duration + 1e-9; t += step)
        o += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x_of(t),
                         height - 6, clock_offset(t));
    // Series.
    bool any = false;
    for (std::size_t i = 0; i < points.size(); ++i) {
        const Points& p = points[i];
        if (p.t.empty()) continue;
        any = true;
        std::string coords;
        coords.reserve(p.t.size() * 12);
        for (std::size_t k = 0; k < p.t.size(); ++k)
            fmt::format_to(std::back_inserter(coords), "{}{:.1f},{:.1f}", k ? " " : "", x_of(p.t[k]), y_of(p.v[k]));
        // Past the palette, the colours repeat dashed; a series identical to an earlier one is dashed
        // in its own pattern, so both stay visible.
        std::string dash;
        if (same_as[i] >= 0)
            dash = fmt::format(" stroke-dasharray=\"{}\" data-same-as=\"{}\"", kDashes[i % std::size(kDashes)],
                               html_escape(c.series[static_cast<std::size_t>(same_as[i])].label));
        else if (i >= std::size(kPalette))
            dash = " stroke-dasharray=\"5 3\"";
        o += fmt::format(
            "<polyline class=\"series\" data-label=\"{}\" data-points=\"{}\" data-samples=\"{}\" stroke=\"{}\"{} "
            "points=\"{}\"/>\n",
            html_escape(c.series[i].label), p.t.size(), std::min(c.series[i].t.size(), c.series[i].values.size()),
            kPalette[i % std::size(kPalette)], dash, coords);
        // Points above the scale: a tick at the top edge each.
        for (std::size_t k = 0; k < p.t.size(); ++k)
            if (p.v[k] > y_max)
                o += fmt::format("<path class=\"outlier\" d=\"M{:.1f},{:.1f} l-3,5 h6 z\" fill=\"{}\"/>\n",
                                 x_of(p.t[k]), plot_top, kPalette[i % std::size(kPalette)]);
        if (p.per_point > 1)
            o += fmt::format(
                "<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"end\">each point: the mean of {} "
                "samples</text>\n",
                left + plot_w, 16, p.per_point);
    }
    if (!any)
        o += fmt::format("<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no samples</text>\n",
                         left + plot_w / 2, plot_top + kPlotH / 2);
    std::size_t above = 0;
    double highest = 0;
    for (const Points& p : points)
        for (double v : p.v)
            if (v > y_max) {
                ++above;
                highest = std::max(highest, v);
            }
    if (above)
        o += fmt::format(
            "<text class=\"axis outliers\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"end\">{} point{} above the scale "
            "(up to {} {}), drawn at the top</text>\n",
            left + plot_w, 16, above, above == 1 ? "" : "s", number_text(highest), html_escape(c.unit));
    // Findings: a vertical line each, numbered like the findings table. Marks that would overprint
    // (findings that started together: eight at 0:00) are one line with their numbers ("1-8") and
    // every finding in its tooltip, in the colour of the most severe.
    auto rank = [](const std::string& s) { return s == "critical" ? 2 : s == "warning" ? 1 : 0; };
    std::vector<ChartMark> marks = c.marks;
    std::stable_sort(marks.begin(), marks.end(), [](const ChartMark& a, const ChartMark& b) { return a.t < b.t; });
    for (std::size_t i = 0; i < marks.size();) {
        std::size_t j = i + 1;
        while (j < marks.size() && x_of(marks[j].t) - x_of(marks[i].t) < 8) ++j;
        std::string severity = marks[i].severity, tooltip;
        std::vector<int> numbers;
        for (std::size_t k = i; k < j; ++k) {
            if (rank(marks[k].severity) > rank(severity)) severity = marks[k].severity;
            tooltip += (tooltip.empty() ? "" : "\n") + marks[k].label;
            numbers.push_back(marks[k].number);
        }
        std::sort(numbers.begin(), numbers.end());
        std::string label = std::to_string(numbers.front());
        if (numbers.size() > 1) {
            const bool consecutive = numbers.back() - numbers.front() + 1 == static_cast<int>(numbers.size());
            label = numbers.size() == 2 || !consecutive
                        ? (numbers.size() == 2 ? fmt::format("{},{}", numbers[0], numbers[1])
                                               : fmt::format("{}+{}", numbers.front(), numbers.size() - 1))
                        : fmt::format("{}-{}", numbers.front(), numbers.back());
        }
        const double x = x_of(marks[i].t);
        o += fmt::format(
            "<g class=\"mark {}\" data-findings=\"{}\"><title>{}</title><line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" "
            "y2=\"{}\" stroke=\"{}\"/><text x=\"{:.1f}\" y=\"{}\" fill=\"{}\" text-anchor=\"middle\">{}</text></g>\n",
            html_escape(severity), j - i, html_escape(tooltip), x, plot_top, x, plot_top + kPlotH,
            severity_colour(severity), x, plot_top - 3, severity_colour(severity), label);
        i = j;
    }
    o += "</svg>\n";
    return o;
}

std::string sparkline(const ChartSeries& s, std::size_t width, double top) {
    static const char* kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    if (s.values.empty()) return "";
    const std::size_t n = s.values.size();
    const std::size_t w = std::min(width, n);
    std::string out;
    for (std::size_t b = 0; b < w; ++b) {
        const std::size_t from = b * n / w, to = std::max(from + 1, (b + 1) * n / w);
        double sum = 0;
        for (std::size_t i = from; i < to; ++i) sum += s.values[i];
        const double v = sum / static_cast<double>(to - from);
        const double share = top > 0 ? std::clamp(v / top, 0.0, 1.0) : 0;
        out += kBars[std::min<std::size_t>(7, static_cast<std::size_t>(share * 7.999))];
    }
    return out;
}

}  // namespace baton::report
