// A time series drawn in text: the newest value at the right edge, older ones to its left, each
// column filled from the bottom up to its value (an area graph, as btop, nvtop and nvitop draw).
// Pure: values in, lines of text out, tested as text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace baton::ui {

enum class GraphGlyphs : std::uint8_t {
    braille,  // two samples per column, four levels per line (U+2800..U+28FF): the default
    blocks,   // one sample per column, eight levels per line (U+2581..U+2588)
    ascii,    // one sample per column, four levels per line: _ - = #
};

// Samples one column shows: 2 in braille, 1 otherwise.
int samples_per_column(GraphGlyphs g);

// `values`, oldest first, on a scale of 0..`top` (NaN: no value, drawn blank), as `rows` lines of
// exactly `width` columns each, top line first. Only the newest width * samples_per_column values
// are drawn; with fewer, the graph starts blank on the left. A value above 0 shows at least one
// level, so a light load does not look like none.
std::vector<std::string> graph_lines(const std::vector<float>& values, double top, int width, int rows, GraphGlyphs g);

}  // namespace baton::ui
