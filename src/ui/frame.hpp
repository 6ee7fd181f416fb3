// A Frame: what baton top shows, as lines of styled text, independent of any terminal. The
// layout builds it from a Snapshot; the terminal draws it with ncurses colours; `--once` prints
// it as plain text (or with its style classes marked, for tests). Styles name what a value
// means (best, alarm, ...), never a colour: the mapping to colours lives in terminal.cpp only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/printable.hpp"

#include "diagnose/indicators.hpp"

namespace baton::ui {

enum class Style : std::uint8_t {
    plain,
    dim,       // secondary text, absent values
    title,     // section names, the header
    low,       // below the best range (Level::low)
    best,      // within it
    elevated,  // above it
    alarm,     // past the alarm level
    column,    // the process table's column header
    selected,  // the selected process row
    status,    // the status line
};

Style style_for(diagnose::Level l);
// "plain", "dim", "title", "low", "best", "elevated", "alarm", "column", "selected", "status".
const char* style_name(Style s);

struct Span {
    std::string text;  // UTF-8; one column per code point (see display_width)
    Style style = Style::plain;
};

struct Line {
    std::vector<Span> spans;
    Style fill = Style::plain;  // style of the padding to the full width (a selected row is highlighted)

    Line& add(std::string text, Style s = Style::plain) {
        spans.push_back({std::move(text), s});
        return *this;
    }
    int width() const;
};

struct Frame {
    int width = 80, height = 24;
    std::vector<Line> lines;  // at most `height`, each at most `width` columns
};

// Columns a UTF-8 string takes: one per code point. baton's own text (bars, borders) is
// single-width; command lines are made printable (see printable()) before they get here.
int display_width(std::string_view s);

// The first code points of `s` that fit in `width` columns.
std::string clip(std::string_view s, int width);
// `s` clipped or padded with spaces to exactly `width` columns.
std::string pad_right(std::string_view s, int width);
std::string pad_left(std::string_view s, int width);

// Text written by other programs (command lines, names) goes through baton::printable
// (core/printable.hpp) before it reaches a frame: control characters and invalid UTF-8 become
// '?'; East Asian wide characters are kept (they may shift a row by a column, never corrupt the
// screen).
using baton::printable;

// Plain text of the frame: exactly `height` lines, none wider than the frame, trailing
// blanks trimmed. What `baton top --once` prints.
std::string render_plain(const Frame& f);
// The same, with every non-plain span marked as {style}text{/}: for tests that check colours.
std::string render_marked(const Frame& f);

}  // namespace baton::ui
