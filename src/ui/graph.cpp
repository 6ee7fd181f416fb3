#include "ui/graph.hpp"

#include <algorithm>
#include <cmath>

namespace baton::ui {

namespace {

int levels_per_line(GraphGlyphs g) {
    return g == GraphGlyphs::blocks ? 8 : 4;
}

// The height of one value in levels (0..total); -1: no value.
int height_of(float v, double top, int total) {
    if (std::isnan(v)) return -1;
    if (!(top > 0) || v <= 0) return 0;
    const int k = static_cast<int>(std::lround(std::min<double>(v, top) / top * total));
    return std::max(k, 1);
}

// The levels a column `height` fills in line `row` (0 = top) of a graph `rows` lines high.
int fill_in_line(int height, int row, int rows, int per_line) {
    return std::clamp(height - per_line * (rows - 1 - row), 0, per_line);
}

void append_braille(std::string& out, unsigned bits) {
    if (bits == 0) {
        out.push_back(' ');  // an empty cell is a space, not U+2800: copied text stays clean
        return;
    }
    const unsigned cp = 0x2800 + bits;
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
}

// Braille dots of one half-cell filled `n` levels from the bottom: left column dots 7,3,2,1,
// right column dots 8,6,5,4 (Unicode's bit order).
unsigned braille_bits(int n, bool right) {
    static constexpr unsigned left_bits[] = {0x40, 0x04, 0x02, 0x01};
    static constexpr unsigned right_bits[] = {0x80, 0x20, 0x10, 0x08};
    unsigned bits = 0;
    for (int i = 0; i < n; ++i) bits |= right ? right_bits[i] : left_bits[i];
    return bits;
}

}  // namespace

int samples_per_column(GraphGlyphs g) {
    return g == GraphGlyphs::braille ? 2 : 1;
}

std::vector<std::string> graph_lines(const std::vector<float>& values, double top, int width, int rows, GraphGlyphs g) {
    std::vector<std::string> out;
    if (width <= 0 || rows <= 0) return out;
    const int per_column = samples_per_column(g);
    const int per_line = levels_per_line(g);
    const int total = per_line * rows;
    const int shown = width * per_column;
    const int n = static_cast<int>(values.size());
    // Heights of the positions left to right; the last one is the newest value.
    std::vector<int> heights(static_cast<std::size_t>(shown), -1);
    for (int p = 0; p < shown; ++p) {
        const int i = n - shown + p;
        if (i >= 0) heights[static_cast<std::size_t>(p)] = height_of(values[static_cast<std::size_t>(i)], top, total);
    }
    static constexpr const char* blocks[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    static constexpr char ascii[] = {' ', '_', '-', '=', '#'};
    for (int row = 0; row < rows; ++row) {
        std::string line;
        for (int c = 0; c < width; ++c) {
            if (g == GraphGlyphs::braille) {
                const int l = heights[static_cast<std::size_t>(2 * c)];
                const int r = heights[static_cast<std::size_t>(2 * c + 1)];
                append_braille(line, braille_bits(l < 0 ? 0 : fill_in_line(l, row, rows, per_line), false) |
                                         braille_bits(r < 0 ? 0 : fill_in_line(r, row, rows, per_line), true));
                continue;
            }
            const int h = heights[static_cast<std::size_t>(c)];
            const int f = h < 0 ? 0 : fill_in_line(h, row, rows, per_line);
            if (g == GraphGlyphs::blocks)
                line += blocks[f];
            else
                line.push_back(ascii[f]);
        }
        out.push_back(std::move(line));
    }
    return out;
}

}  // namespace baton::ui
