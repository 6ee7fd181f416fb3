// The layout of baton top: a Snapshot, the breaches of the indicator table and the view state
// become a Frame of the given size. Pure: no terminal, no clock, no /proc, so every screen is
// tested as text (golden frames) and the ncurses side only draws.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/thresholds.hpp"
#include "diagnose/indicators.hpp"
#include "sample/snapshot.hpp"
#include "ui/frame.hpp"
#include "ui/graph_history.hpp"
#include "ui/process_rows.hpp"
#include "ui/view_state.hpp"

namespace baton::ui {

// baton's own cost, shown in the header so users see that the monitor costs nothing.
struct SelfUsage {
    std::optional<double> cpu_percent;
    std::optional<std::uint64_t> rss_bytes;
};

struct TopInput {
    const Snapshot* snapshot = nullptr;
    std::vector<diagnose::Breach> breaches;
    Thresholds thresholds;
    SelfUsage self;
    const GraphHistory* history = nullptr;  // the graphs' past; none: no graphs
    // Where the snapshot came from when not this machine (baton top --hosts: "gpu3, 0.2 s ago, Esc:
    // all hosts"): said in the header in place of baton's own cost here.
    std::string origin;
    Style origin_style = Style::dim;
};

// What the layout decided that the key handling needs: the rows in display order and which of
// them are visible (the selection is kept in view by adjusting the scroll).
struct LayoutResult {
    Frame frame;
    std::vector<std::uint32_t> row_pids;  // every row after filter and sort, in order
    int scroll = 0;                       // first row shown
    int visible_rows = 0;                 // rows the table had room for
    bool gpu_details_shown = false;       // the expanded GPU panel is on screen (what `e` turns off)
    // Where the table is, for the mouse: the line of its header (-1: not shown) and the columns of
    // each header cell that sorts, [from, to).
    int header_line = -1;
    struct SortCell {
        int from, to;
        SortKey key;
    };
    std::vector<SortCell> sort_cells;
};

LayoutResult layout_top(const TopInput& in, const ViewState& v, int width, int height);

}  // namespace baton::ui
