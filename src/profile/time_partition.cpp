#include "profile/time_partition.hpp"

#include <algorithm>
#include <map>

namespace baton::profile {

std::vector<Piece> partition(const std::vector<Span>& spans, double from, double to) {
    std::vector<Piece> out;
    if (!(to > from)) return out;
    // Boundaries: +1 at a span's start, -1 at its end; the running count per label says who is on.
    struct Edge {
        double at;
        int label, delta;
    };
    std::vector<Edge> edges;
    edges.reserve(spans.size() * 2);
    for (const Span& s : spans) {
        const double a = std::max(s.start, from), b = std::min(s.end, to);
        if (b <= a || s.label < 0) continue;
        edges.push_back({a, s.label, +1});
        edges.push_back({b, s.label, -1});
    }
    std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.at < y.at; });
    std::map<int, int> on;  // label -> spans running; the first key with a count wins
    auto winner = [&]() {
        for (const auto& [label, n] : on)
            if (n > 0) return label;
        return -1;
    };
    auto emit = [&](double a, double b, int label) {
        if (b <= a) return;
        if (!out.empty() && out.back().label == label && out.back().end == a)
            out.back().end = b;
        else
            out.push_back({a, b, label});
    };
    double at = from;
    for (std::size_t i = 0; i < edges.size();) {
        const double t = edges[i].at;
        emit(at, t, winner());
        for (; i < edges.size() && edges[i].at == t; ++i) {
            int& n = on[edges[i].label];
            n += edges[i].delta;
            if (n == 0) on.erase(edges[i].label);
        }
        at = t;
    }
    emit(at, to, winner());
    return out;
}

void add_clipped(const std::vector<Piece>& pieces, double from, double to, std::vector<double>& out) {
    auto first =
        std::lower_bound(pieces.begin(), pieces.end(), from, [](const Piece& p, double t) { return p.end <= t; });
    for (auto it = first; it != pieces.end() && it->start < to; ++it) {
        if (it->label < 0 || static_cast<std::size_t>(it->label) >= out.size()) continue;
        const double a = std::max(it->start, from), b = std::min(it->end, to);
        if (b > a) out[static_cast<std::size_t>(it->label)] += b - a;
    }
}

}  // namespace baton::profile
