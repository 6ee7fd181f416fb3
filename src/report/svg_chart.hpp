// A small time-series chart renderer: one inline SVG per chart, lines for series, vertical marks
// for findings. baton's reports draw their charts with this instead of a JavaScript chart
// library, so a report is a plain file that renders with scripts off, makes no request, and
// is tested point by point (docs/architecture.md, "Reports").
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace baton::report {

struct ChartSeries {
    std::string label;           // legend text, e.g. "GPU0"
    std::vector<double> t;       // seconds since the run started, ascending
    std::vector<double> values;  // same length as t
};

struct ChartMark {
    double t = 0;          // seconds since the run started
    std::string severity;  // "critical", "warning" or "info": its colour
    std::string label;     // the tooltip
    int number = 0;        // shown at the top, matching the findings table
};

struct Chart {
    std::string id;               // the svg element's id
    std::string title;            // shown above the plot, with the unit
    std::string unit;             // for the axis labels, e.g. "%", "GiB", "MB/s"
    double duration = 0;          // the x axis runs from 0 to this (seconds)
    std::optional<double> y_max;  // fixed top of the y axis (100 for percentages); else from the data
    std::vector<ChartSeries> series;
    std::vector<ChartMark> marks;
    std::string name;  // short, for text views ("GPU util", "CPU")
};

// Series longer than this are drawn as the means of equal runs of samples (the chart says so);
// one point per sample up to it (an hour at 0.5 s is 7,200).
constexpr std::size_t kMaxChartPoints = 8000;

// The chart as an <svg> element. Each series is a <polyline class="series" data-label=...
// data-points=N data-samples=M>, each finding a <line class="mark SEVERITY">.
std::string render_chart_svg(const Chart& c);

// "1:05", "1:02:03": a time offset on the x axis.
std::string clock_offset(double seconds);

// A number for people, never with an exponent: whole numbers and anything from 100 up without a
// fraction ("1410", not "1.41e+03"), smaller ones to three significant digits ("62.5", "0.25").
// The charts' labels, the Markdown report and compare's evidence all print numbers with it.
std::string number_text(double v);

// A series as a line of `width` block characters (▁ to █), each the mean of its share of the
// values, scaled to `top`: the Markdown report's charts.
std::string sparkline(const ChartSeries& s, std::size_t width, double top);

// Text for HTML: & < > " ' escaped.
std::string html_escape(const std::string& s);

}  // namespace baton::report
