// The history graphs of baton top: the glyphs (braille, blocks, ASCII), the ring that keeps the
// past, and the graph strips in the layout (golden frames from fixed ring content).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_support.hpp"
#include "ui/graph.hpp"
#include "ui/graph_history.hpp"
#include "ui/top_keys.hpp"
#include "ui/top_layout.hpp"

using namespace baton;
using namespace baton::ui;
using baton::test::expect_golden;

namespace {

constexpr float kNone = std::numeric_limits<float>::quiet_NaN();

int columns(const std::string& s) {
    return display_width(s);
}

GpuInfo gpu(unsigned index, double util, double mem_percent, std::optional<double> sm = std::nullopt) {
    GpuInfo g;
    g.index = index;
    g.uuid = "GPU-" + std::to_string(index);
    g.name = "NVIDIA H200";
    g.utilization_percent = util;
    g.memory_total_bytes = 140ull << 30;
    g.memory_used_bytes = static_cast<std::uint64_t>(mem_percent / 100.0 * static_cast<double>(140ull << 30));
    g.sm_activity_percent = sm;
    return g;
}

// The machine at sample i of a fixed pattern: CPU climbing in steps, memory flat, GPU0 busy with a
// dip (an input stall), GPU1 idle then starting.
Snapshot sample_at(int i, bool sm = false) {
    Snapshot s;
    s.host.hostname = "box";
    s.host.cpu_count = 4;
    s.interval_seconds = 1;
    s.cpu.total.utilization_percent = (i % 40) * 2.5;
    s.memory.total_bytes = 64ull << 30;
    s.memory.used_bytes = 24ull << 30;
    s.memory.available_bytes = 40ull << 30;
    const double util0 = (i % 20 >= 12 && i % 20 < 15) ? 5 : 97;
    s.gpus.push_back(gpu(0, util0, 70, sm ? std::optional<double>(util0 * 0.6) : std::nullopt));
    s.gpus.push_back(
        gpu(1, i < 30 ? 0 : 88, i < 30 ? 1 : 92, sm ? std::optional<double>(i < 30 ? 0 : 50) : std::nullopt));
    s.processes_collected = true;
    ProcessInfo p;
    p.pid = 100;
    p.user = "alice";
    p.name = "python";
    p.command = "python train.py";
    p.cpu_percent = 99;
    p.gpu_indices = {0};
    p.gpu_memory_bytes = 98ull << 30;
    s.processes.push_back(p);
    return s;
}

GraphHistory history_of(int samples, bool sm = false) {
    GraphHistory h(600);
    for (int i = 0; i < samples; ++i) h.add(sample_at(i, sm));
    return h;
}

std::string layout(const GraphHistory* h, const ViewState& v, int w, int height, bool sm = false) {
    const Snapshot s = sample_at(59, sm);
    TopInput in;
    in.snapshot = &s;
    in.history = h;
    return render_plain(layout_top(in, v, w, height).frame);
}

}  // namespace

TEST(Graph, BrailleHoldsTwoSamplesPerColumnFromTheBottom) {
    // One line: 0 shows nothing, 100 fills the right half (dots 4,5,6,8).
    EXPECT_EQ(graph_lines({0, 100}, 100, 1, 1, GraphGlyphs::braille), (std::vector<std::string>{"⢸"}));
    // Two lines, 8 levels: 50 fills the bottom line's left half, 100 both halves of both lines.
    EXPECT_EQ(graph_lines({50, 100}, 100, 1, 2, GraphGlyphs::braille), (std::vector<std::string>{"⢸", "⣿"}));
    // 25 of 100 over one line is one level: dot 7 alone (left) or dot 8 (right).
    EXPECT_EQ(graph_lines({25, 25}, 100, 1, 1, GraphGlyphs::braille), (std::vector<std::string>{"⣀"}));
}

TEST(Graph, NewestAtTheRightFewerValuesStartBlank) {
    EXPECT_EQ(graph_lines({100}, 100, 3, 1, GraphGlyphs::braille), (std::vector<std::string>{"  ⢸"}));
    EXPECT_EQ(graph_lines({}, 100, 3, 1, GraphGlyphs::blocks), (std::vector<std::string>{"   "}));
    // More values than columns: only the newest are drawn.
    EXPECT_EQ(graph_lines({100, 100, 100, 0, 50}, 100, 2, 1, GraphGlyphs::blocks), (std::vector<std::string>{" ▄"}));
}

TEST(Graph, BlocksAndAsciiLevels) {
    EXPECT_EQ(graph_lines({0, 12.5, 50, 100}, 100, 4, 1, GraphGlyphs::blocks), (std::vector<std::string>{" ▁▄█"}));
    // ASCII, two lines (8 levels): 100 full, 25 two levels, no value blank, 60 five levels.
    EXPECT_EQ(graph_lines({100, 25, kNone, 60}, 100, 4, 2, GraphGlyphs::ascii),
              (std::vector<std::string>{"#  _", "#- #"}));
}

TEST(Graph, SmallLoadStillShowsAndOutOfRangeIsClamped) {
    EXPECT_EQ(graph_lines({1}, 100, 1, 4, GraphGlyphs::blocks), (std::vector<std::string>{" ", " ", " ", "▁"}));
    EXPECT_EQ(graph_lines({250, -5}, 100, 2, 1, GraphGlyphs::blocks), (std::vector<std::string>{"█ "}));
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(graph_lines({inf, kNone}, 100, 1, 1, GraphGlyphs::braille), (std::vector<std::string>{"⡇"}));
    EXPECT_EQ(graph_lines({50}, 0, 1, 1, GraphGlyphs::blocks), (std::vector<std::string>{" "}));  // no scale
    EXPECT_TRUE(graph_lines({50}, 100, 0, 1, GraphGlyphs::blocks).empty());
    EXPECT_TRUE(graph_lines({50}, 100, 3, 0, GraphGlyphs::blocks).empty());
}

TEST(Graph, EveryLineIsExactlyTheWidth) {
    std::vector<float> v;
    for (int i = 0; i < 300; ++i) v.push_back(static_cast<float>(std::fmod(i * 7.3, 101)));
    for (GraphGlyphs g : {GraphGlyphs::braille, GraphGlyphs::blocks, GraphGlyphs::ascii})
        for (int w : {1, 7, 80})
            for (int rows : {1, 3})
                for (const std::string& l : graph_lines(v, 100, w, rows, g)) EXPECT_EQ(columns(l), w) << l;
}

TEST(GraphHistory, KeepsTheNewestSamplesInOrder) {
    GraphHistory h(3);
    std::vector<float> out;
    h.recent(GraphSeries::cpu, "", 10, out);
    EXPECT_TRUE(out.empty());
    for (int i = 1; i <= 5; ++i) {
        Snapshot s;
        s.cpu.total.utilization_percent = i * 10;
        h.add(s);
    }
    EXPECT_EQ(h.size(), 3u);
    h.recent(GraphSeries::cpu, "", 10, out);
    EXPECT_EQ(out, (std::vector<float>{30, 40, 50}));
    h.recent(GraphSeries::cpu, "", 2, out);
    EXPECT_EQ(out, (std::vector<float>{40, 50}));
    // No memory total: no value, not 0.
    h.recent(GraphSeries::memory, "", 1, out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(std::isnan(out[0]));
}

TEST(GraphHistory, GpusThatComeGoOrStallAreGaps) {
    GraphHistory h(10);
    Snapshot a;  // no GPU yet
    h.add(a);
    Snapshot b;
    b.gpus.push_back(gpu(0, 40, 50, 20.0));
    h.add(b);
    Snapshot c;
    c.gpus.push_back(gpu(0, 60, 50));
    c.gpus[0].stale = true;  // NVML stopped answering: these are the last tick's values
    h.add(c);
    Snapshot d;  // the GPU fell off the list
    h.add(d);
    Snapshot e;
    e.gpus.push_back(gpu(0, 80, 25));
    h.add(e);
    std::vector<float> out;
    h.recent(GraphSeries::gpu_utilization, "GPU-0", 10, out);
    ASSERT_EQ(out.size(), 5u);
    EXPECT_TRUE(std::isnan(out[0]));
    EXPECT_EQ(out[1], 40);
    EXPECT_TRUE(std::isnan(out[2]));
    EXPECT_TRUE(std::isnan(out[3]));
    EXPECT_EQ(out[4], 80);
    h.recent(GraphSeries::gpu_sm_activity, "GPU-0", 10, out);
    EXPECT_EQ(out[1], 20);
    EXPECT_TRUE(std::isnan(out[4]));  // no GPM in that sample
    h.recent(GraphSeries::gpu_memory, "GPU-0", 1, out);
    EXPECT_NEAR(out[0], 25, 0.01);
    h.recent(GraphSeries::gpu_utilization, "GPU-9", 3, out);  // never seen: as many gaps as asked
    ASSERT_EQ(out.size(), 3u);
    EXPECT_TRUE(std::isnan(out[2]));
}

TEST(GraphHistory, MemoryIsAllocatedWholeAndSmall) {
    GraphHistory h(601);
    Snapshot s = sample_at(0);
    for (int i = 0; i < 6; ++i) s.gpus.push_back(gpu(static_cast<unsigned>(2 + i), 50, 50));
    h.add(s);
    const std::size_t first = h.bytes();
    for (int i = 0; i < 2000; ++i) h.add(s);
    EXPECT_EQ(h.bytes(), first);  // flat: nothing grows with time
    EXPECT_EQ(first, (2 + 3 * 8) * 601 * sizeof(float));
    EXPECT_LT(first, 2u << 20);  // the issue's bound for 8 GPUs and 10 minutes at 1 s, with room to spare
}

TEST(TopGraphs, GoldenStripsBraille) {
    const GraphHistory h = history_of(60);
    ViewState v;
    v.show_selection = false;
    expect_golden("graphs-braille-100x40", layout(&h, v, 100, 40));
}

TEST(TopGraphs, GoldenStripsBlocksWithSm) {
    const GraphHistory h = history_of(60, true);
    ViewState v;
    v.show_selection = false;
    v.graph_glyphs = GraphGlyphs::blocks;
    expect_golden("graphs-blocks-sm-120x34", layout(&h, v, 120, 34, true));
}

TEST(TopGraphs, GoldenStripsAscii) {
    const GraphHistory h = history_of(60);
    ViewState v;
    v.show_selection = false;
    v.ascii = true;
    const std::string f = layout(&h, v, 90, 30);
    expect_golden("graphs-ascii-90x30", f);
    for (unsigned char c : f) ASSERT_LT(c, 0x80) << f;  // nothing but ASCII
}

TEST(TopGraphs, GKeyHidesThemAndSmallTerminalsDropThemFirst) {
    const GraphHistory h = history_of(60);
    ViewState v;
    v.show_selection = false;
    const std::string tall = layout(&h, v, 100, 40);
    ASSERT_NE(tall.find("Host cpu"), std::string::npos) << tall;
    ASSERT_NE(tall.find("GPU1 util"), std::string::npos) << tall;
    LayoutResult last;
    handle_key(char_key('G'), last, v);
    EXPECT_FALSE(v.graphs);
    const std::string off = layout(&h, v, 100, 40);
    EXPECT_EQ(off.find("Host cpu"), std::string::npos) << off;
    handle_key(char_key('G'), last, v);
    EXPECT_TRUE(v.graphs);
    // A short terminal keeps its sections and table, not graphs; so does a narrow one.
    const std::string small = layout(&h, v, 100, 18);
    EXPECT_EQ(small.find("Host cpu"), std::string::npos) << small;
    EXPECT_NE(small.find("PID"), std::string::npos) << small;
    const std::string narrow = layout(&h, v, 30, 40);
    EXPECT_EQ(narrow.find("Host cpu"), std::string::npos) << narrow;
    // One sample is no graph (baton top --once).
    const GraphHistory one = history_of(1);
    EXPECT_EQ(layout(&one, v, 100, 40).find("Host cpu"), std::string::npos);
}

TEST(TopGraphs, TallTerminalsGiveThemMoreLinesButTheTableKeepsHalf) {
    const GraphHistory h = history_of(60);
    ViewState v;
    v.show_selection = false;
    // Lines between the Net section and the table's header: the graph strips.
    auto graph_lines_in = [](const std::string& f) {
        const std::size_t net = f.find("\nNet ");
        const std::size_t table = f.find("PID USER");
        if (net == std::string::npos || table == std::string::npos) return -1;
        return static_cast<int>(
                   std::count(f.begin() + static_cast<long>(net) + 1, f.begin() + static_cast<long>(table), '\n')) -
               1;
    };
    const std::string mid = layout(&h, v, 100, 30);
    const std::string tall = layout(&h, v, 100, 80);
    EXPECT_EQ(graph_lines_in(mid), 3 * 3) << mid;    // 3 strips (host, GPU0, GPU1) of 3 lines
    EXPECT_EQ(graph_lines_in(tall), 3 * 4) << tall;  // at most 4 lines each
    EXPECT_NE(tall.find("PID"), std::string::npos);
}

TEST(TopGraphs, EverySizeFitsWithGraphs) {
    const GraphHistory h = history_of(120, true);
    ViewState v;
    for (bool ascii : {false, true}) {
        v.ascii = ascii;
        for (int w : {20, 40, 80, 132, 250})
            for (int height : {5, 10, 24, 60}) {
                const std::string f = layout(&h, v, w, height, true);
                ASSERT_EQ(std::count(f.begin(), f.end(), '\n'), height) << w << "x" << height;
                std::size_t start = 0;
                for (std::size_t end; (end = f.find('\n', start)) != std::string::npos; start = end + 1)
                    EXPECT_LE(columns(f.substr(start, end - start)), w) << w << "x" << height << "\n" << f;
            }
    }
}
