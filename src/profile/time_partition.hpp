// Overlapping spans of labelled time cut into one partition: at each instant the span with the
// lowest label wins, so the pieces never overlap and add up to the time covered. This is how a
// step's wall time on a GPU is split when kernels of several streams run at once (compute before
// communication before copies: communication under compute is hidden, not spent) and how the host's
// time is split among phases that nest (a sync inside the forward pass is the sync's). Pure.
#pragma once

#include <cstdint>
#include <vector>

namespace baton::profile {

struct Span {
    double start = 0, end = 0;  // microseconds; end <= start is empty
    int label = 0;              // 0 wins over 1, ...
};

struct Piece {
    double start = 0, end = 0;
    int label = -1;  // -1: no span covers it (a gap)
};

// The pieces of [from, to) in time order, adjacent pieces of one label merged; gaps are pieces of
// label -1. `spans` need not be sorted. O(n log n).
std::vector<Piece> partition(const std::vector<Span>& spans, double from, double to);

// The time of [from, to) that `pieces` (in order, not overlapping) give to each label; `out` has a
// slot per label, gaps are not counted.
void add_clipped(const std::vector<Piece>& pieces, double from, double to, std::vector<double>& out);

}  // namespace baton::profile
