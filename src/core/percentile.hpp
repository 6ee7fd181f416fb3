// The nearest-rank percentile, as the run summary, reports and comparisons print it ("p95").
#pragma once

#include <algorithm>
#include <vector>

namespace baton {

// The value at the p-th percentile (0..100, nearest rank) of v; 0 for an empty v.
inline double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

}  // namespace baton
