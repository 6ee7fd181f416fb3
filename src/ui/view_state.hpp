// What the user chose to see in baton top: sort, tree, filters, selection, prompts. Plain
// data: keys change it (top_keys.cpp), the layout reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ui/graph.hpp"
#include "ui/process_columns.hpp"

namespace baton::ui {

enum class SortKey {
    gpu_memory,  // GPU memory, then CPU, then RSS: the default (who holds the GPUs, then who works)
    cpu,
    memory,  // RSS
    pid,
    io,  // read + write bytes per second
    user,
    command,
};

// The key that selects each sort in the sort prompt, and the column it sorts.
char sort_key_letter(SortKey k);
const char* sort_key_name(SortKey k);

enum class Prompt {
    none,
    filter,   // typing the filter text
    sort,     // choosing the sort column
    kill,     // confirming a signal to the selected process
    columns,  // choosing the process table's columns
    renice,   // typing a nice value for the selected process
};

struct ViewState {
    SortKey sort = SortKey::gpu_memory;
    bool tree = false;            // group processes under their parents, with the group's total CPU
    bool gpu_only = false;        // only processes that hold GPU memory or run on a GPU
    bool kernel_threads = false;  // show kernel threads (kthreadd and its children): noise on a training box
    bool paused = false;          // keep showing the last snapshot
    bool help = false;
    bool ascii = false;                               // bars, graphs and tree lines in ASCII
    ColumnSet columns = default_columns();            // the table's optional columns ([top] columns, --columns, c)
    bool graphs = true;                               // history graphs where the terminal has room (G toggles)
    GraphGlyphs graph_glyphs = GraphGlyphs::braille;  // braille or blocks ([top] graph_symbols); ascii wins
    // The expanded GPU panel (clocks, links, memory health, MIG) under each GPU's line: absent =
    // where the terminal has room; `e` sets it on or off.
    std::optional<bool> gpu_details;
    std::string filter;              // case-insensitive substring of command, user or pid; empty: all
    std::uint32_t selected_pid = 0;  // 0: the first row
    bool show_selection = true;      // false for printed frames (--once, batch): no cursor there
    int scroll = 0;                  // first process row shown
    Prompt prompt = Prompt::none;
    std::string edit;     // the filter being typed
    std::string message;  // one-off notice for the status line (cleared by the next key)
};

}  // namespace baton::ui
