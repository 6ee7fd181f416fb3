// The SVG chart renderer: one point per sample, escaping, reduction of long series, marks.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "report/svg_chart.hpp"

using namespace baton;
using namespace baton::report;

namespace {

ChartSeries ramp(const std::string& label, std::size_t n, double step_s) {
    ChartSeries s;
    s.label = label;
    for (std::size_t i = 0; i < n; ++i) {
        s.t.push_back(static_cast<double>(i) * step_s);
        s.values.push_back(static_cast<double>(i % 100));
    }
    return s;
}

// The coordinate pairs of every polyline, by its data-label (found by hand: std::regex recurses
// per character and overflows the stack on a long points attribute).
std::vector<std::pair<std::string, std::size_t>> polylines(const std::string& svg) {
    std::vector<std::pair<std::string, std::size_t>> out;
    const std::string tag = "<polyline class=\"series\" data-label=\"";
    for (std::size_t at = svg.find(tag); at != std::string::npos; at = svg.find(tag, at + 1)) {
        const std::size_t label = at + tag.size();
        const std::size_t points = svg.find(" points=\"", label) + 9;
        const std::size_t end = svg.find('"', points);
        std::size_t pairs = end > points ? 1 : 0;
        for (std::size_t i = points; i < end; ++i) pairs += svg[i] == ' ' ? 1 : 0;
        out.push_back({svg.substr(label, svg.find('"', label) - label), pairs});
    }
    return out;
}

}  // namespace

TEST(SvgChart, OnePointPerSample) {
    Chart c{"chart-x", "GPU utilisation", "%", 60, 100.0, {ramp("GPU0", 121, 0.5), ramp("GPU1", 90, 0.5)}, {}, "x"};
    const std::string svg = render_chart_svg(c);
    const auto lines = polylines(svg);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0], (std::pair<std::string, std::size_t>{"GPU0", 121}));
    EXPECT_EQ(lines[1], (std::pair<std::string, std::size_t>{"GPU1", 90}));
    EXPECT_NE(svg.find("data-points=\"121\" data-samples=\"121\""), std::string::npos);
    EXPECT_NE(svg.find("id=\"chart-x\" data-samples=\"121\""), std::string::npos);
    EXPECT_EQ(svg.find("mean of"), std::string::npos);
    // Every point lies inside the plot area.
    const std::regex xy(R"((\d+\.\d),(\d+\.\d))");
    const std::string pts = svg.substr(svg.find("points=\""));
    for (auto it = std::sregex_iterator(pts.begin(), pts.end(), xy); it != std::sregex_iterator(); ++it) {
        EXPECT_GE(std::stod((*it)[1]), 52.0);
        EXPECT_LE(std::stod((*it)[1]), 948.0);
        EXPECT_GE(std::stod((*it)[2]), 50.0);  // below the title and the one legend row
        EXPECT_LE(std::stod((*it)[2]), 196.0);
    }
}

TEST(SvgChart, LongSeriesAreAveragedAndSaySo) {
    Chart c{"long", "t", "%", 86400, std::nullopt, {ramp("host", 172800, 0.5)}, {}, "x"};
    const std::string svg = render_chart_svg(c);
    const auto lines = polylines(svg);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_LE(lines[0].second, kMaxChartPoints);
    EXPECT_GT(lines[0].second, kMaxChartPoints / 2);
    EXPECT_NE(svg.find("data-samples=\"172800\""), std::string::npos);
    EXPECT_NE(svg.find("each point: the mean of 22 samples"), std::string::npos);
    EXPECT_NE(svg.find(">24:00:00<"), std::string::npos);  // the x axis reaches the end
}

TEST(SvgChart, MarksAndEscaping) {
    Chart c{"c",
            "Memory <host> & \"job\"",
            "GiB",
            100,
            std::nullopt,
            {ramp("a<b", 10, 1)},
            {{50, "critical", "#1 cuda_oom: <torch> said \"out of memory\"", 1}, {75, "warning", "#2 x", 2}},
            "Memory"};
    const std::string svg = render_chart_svg(c);
    EXPECT_EQ(svg.find("<host>"), std::string::npos);
    EXPECT_NE(svg.find("Memory &lt;host&gt; &amp; &quot;job&quot;"), std::string::npos);
    EXPECT_NE(svg.find("data-label=\"a&lt;b\""), std::string::npos);
    EXPECT_NE(svg.find("<g class=\"mark critical\" data-findings=\"1\"><title>#1 cuda_oom: &lt;torch&gt;"),
              std::string::npos);
    EXPECT_NE(svg.find("<g class=\"mark warning\" data-findings=\"1\">"), std::string::npos);
    // The mark at 50 s of 100 s sits in the middle of the plot (52 + 896 / 2).
    EXPECT_NE(svg.find("x1=\"500.0\""), std::string::npos);
}

TEST(SvgChart, EmptyChartSaysSo) {
    Chart c{"e", "Disk", "MB/s", 10, std::nullopt, {ChartSeries{"read", {}, {}}}, {}, "x"};
    const std::string svg = render_chart_svg(c);
    EXPECT_TRUE(polylines(svg).empty());
    EXPECT_NE(svg.find("no samples"), std::string::npos);
}

TEST(SvgChart, ClockOffsets) {
    EXPECT_EQ(clock_offset(0), "0:00");
    EXPECT_EQ(clock_offset(65.4), "1:05");
    EXPECT_EQ(clock_offset(3723), "1:02:03");
    EXPECT_EQ(clock_offset(-3), "0:00");
}

// Findings that start together are one mark with their numbers (eight at 0:00 overprinted, and #9
// and #10 read "19"), coloured by the most severe, every one in its tooltip.
TEST(SvgChart, MarksAtTheSameMomentAreGrouped) {
    Chart c{"g", "GPU", "%", 100, 100.0, {ramp("GPU0", 10, 1)}, {}, "x"};
    for (int i = 1; i <= 8; ++i) c.marks.push_back({0, i == 5 ? "warning" : "info", "#" + std::to_string(i), i});
    c.marks.push_back({60, "info", "#9 a", 9});
    c.marks.push_back({60.1, "critical", "#10 b", 10});
    c.marks.push_back({90, "info", "#11 c", 11});
    const std::string svg = render_chart_svg(c);
    EXPECT_NE(svg.find("<g class=\"mark warning\" data-findings=\"8\"><title>#1\n#2"), std::string::npos) << svg;
    EXPECT_NE(svg.find(">1-8</text>"), std::string::npos);
    EXPECT_NE(svg.find("<g class=\"mark critical\" data-findings=\"2\">"), std::string::npos);
    EXPECT_NE(svg.find(">9,10</text>"), std::string::npos);
    EXPECT_NE(svg.find(">11</text>"), std::string::npos);
    std::size_t groups = 0;
    for (std::size_t at = svg.find("<g class=\"mark "); at != std::string::npos;
         at = svg.find("<g class=\"mark ", at + 1))
        ++groups;
    EXPECT_EQ(groups, 3u);
}

// One slow first step (1.4 s) among 60 ms steps: the scale follows the bulk, the outlier is marked
// at the top and counted; the y labels get the room they need ("samples/s" was clipped).
TEST(SvgChart, ScaledToTheBulkWithOutliersMarked) {
    ChartSeries steps{"step time", {}, {}};
    for (int i = 0; i < 100; ++i) {
        steps.t.push_back(i * 0.1);
        steps.values.push_back(i == 0 ? 1400 : 60 + i % 5);
    }
    Chart c{"s", "Step time", "ms", 10, std::nullopt, {steps}, {}, "x"};
    std::string svg = render_chart_svg(c);
    EXPECT_NE(svg.find(">100 ms</text>"), std::string::npos)
        << "the top is near the bulk, not 1400: " << svg.substr(0, 600);
    EXPECT_EQ(svg.find(">2000 ms</text>"), std::string::npos);
    EXPECT_NE(svg.find("1 point above the scale (up to 1400 ms)"), std::string::npos);
    EXPECT_NE(svg.find("<path class=\"outlier\""), std::string::npos);
    EXPECT_EQ(polylines(svg)[0].second, 100u);  // still a point per sample
    // Long labels: the plot starts right of them.
    Chart t{"t", "Throughput", "samples/s", 10, std::nullopt, {ramp("rank 0", 50, 0.2)}, {}, "x"};
    for (double& v : t.series[0].values) v *= 100;
    svg = render_chart_svg(t);
    const std::size_t label = svg.find(" samples/s</text>");
    ASSERT_NE(label, std::string::npos);
    const std::size_t x_at = svg.rfind("x=\"", label);
    const double label_right = std::stod(svg.substr(x_at + 3));
    EXPECT_NE(svg.find(">5000 samples/s</text>"), std::string::npos);
    EXPECT_GE(label_right, 6.5 * std::string("5000 samples/s").size());  // room for the whole label
}

// Eight GPUs at the same values would draw as one line: the copies are dashed and the legend says so.
TEST(SvgChart, IdenticalSeriesAreDistinguished) {
    Chart c{"i", "GPU", "%", 10, 100.0, {}, {}, "x"};
    for (int g = 0; g < 3; ++g) c.series.push_back(ramp("GPU" + std::to_string(g), 10, 1));
    c.series.push_back(ramp("GPU3", 11, 1));
    const std::string svg = render_chart_svg(c);
    EXPECT_NE(svg.find("GPU1 (= GPU0, dashed)"), std::string::npos);
    EXPECT_NE(svg.find("GPU2 (= GPU0, dashed)"), std::string::npos);
    EXPECT_EQ(svg.find("GPU3 (="), std::string::npos);  // different
    EXPECT_NE(svg.find("data-label=\"GPU1\""), std::string::npos);
    EXPECT_NE(svg.find("data-same-as=\"GPU0\""), std::string::npos);
}
