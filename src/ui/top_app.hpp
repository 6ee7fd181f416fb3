// baton top: the interactive screen (ncurses), the batch mode for dumb terminals and pipes,
// and the one-frame mode (--once). Sampling runs on its own thread, so a slow NVML call never
// freezes keys or the screen.
#pragma once

#include <string>

#include "core/thresholds.hpp"
#include "sample/sampler.hpp"
#include "ui/view_state.hpp"

namespace baton::ui {

struct TopOptions {
    SamplerOptions sampler;
    Thresholds thresholds;
    double delay_seconds = 1.0;
    double history_seconds = 600;  // what the graphs keep ([top] history_minutes)
    ViewState view;                // the initial view (sort, tree, filter, ascii)
    bool color = true;             // false with NO_COLOR
    // The rows are this machine's /proc (not a --proc-root elsewhere): baton's own CPU and RSS come
    // from the process table, and k may signal a row's pid (elsewhere that pid is another process).
    bool local_proc = true;
    int width = 0, height = 0;  // fixed size (0: the terminal's, or 80x24 when there is none)
    int count = 0;              // batch mode: frames to print (0: until interrupted)
};

// Samples the graphs keep: `history_seconds` at one sample per delay.
std::size_t history_capacity(const TopOptions& o);

// The size of a printed frame: the options' fixed size, else the terminal's (80x24 without one).
void frame_size(const TopOptions& o, int& w, int& h);

// Runs the interactive screen until `q`, Ctrl-C, SIGTERM or SIGHUP. Returns the exit code (0
// after q, 128 + N after signal N); an error when the terminal cannot be used.
Result<int> run_top_interactive(const TopOptions& o);

// Prints a plain-text frame every delay (TERM=dumb, or output not a terminal).
int run_top_batch(const TopOptions& o);

// One frame, after a first reading primes the rates. `marked`: style classes marked {style}..{/}.
std::string top_once(const TopOptions& o, bool marked);

}  // namespace baton::ui
