// Building one line of baton top: compact numbers, bars, and pieces that are dropped by
// priority until the line fits its width, with the room left shared among the bars.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ui/frame.hpp"

namespace baton::ui {

// A piece of a line. Pieces with a priority above 0 are dropped, lowest first, until the line
// fits; bars then share the room left, between their minimum and maximum width.
struct Piece {
    std::string text;
    Style style = Style::plain;
    int priority = 0;  // 0: never dropped
    bool is_bar = false;
    double percent = 0;
    int bar_min = 3, bar_max = 30;
    bool space_before = true;
};

Piece text_piece(std::string text, Style style = Style::plain, int priority = 0, bool space = true);
Piece bar_piece(double percent, Style style, int min_width, int max_width, int priority = 0);

// The pieces as one line of at most `width` columns (see Piece).
Line fit_pieces(std::vector<Piece> pieces, int width, bool ascii);

// "12.3G", "512M", "4.0K", "900B": 1024-based, at most 5 columns.
std::string compact_bytes(double bytes);

// A bar of exactly `width` columns filled to `percent` (clamped to 0-100): eighth blocks in
// Unicode, '|' in ASCII.
std::string bar(double percent, int width, bool ascii);

// " 42%" (right-aligned in `width` columns before the sign), or "  -%" when unknown.
std::string percent_text(std::optional<double> v, int width = 3);
// "1.2M/s", or "-" when unknown.
std::string rate_text(std::optional<double> v);
// "H100 80GB HBM3" for "NVIDIA H100 80GB HBM3" (and GeForce's prefix), made printable.
std::string short_gpu_name(const std::string& name);
// "3d 4h", "2h 5m", "7m 30s".
std::string duration_text(double seconds);

}  // namespace baton::ui
