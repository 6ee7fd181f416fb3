#include "tune/numerics.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

namespace baton::tune {

namespace {

// The mean of the last half, or nullopt when there is none; NaN when a value in it is not finite.
std::optional<double> tail_mean(const std::vector<double>& losses) {
    if (losses.empty()) return std::nullopt;
    const std::size_t from = losses.size() / 2;
    double sum = 0;
    for (std::size_t i = from; i < losses.size(); ++i) {
        if (!std::isfinite(losses[i])) return std::nan("");
        sum += losses[i];
    }
    return sum / static_cast<double>(losses.size() - from);
}

std::vector<double> means(const std::vector<std::vector<double>>& runs) {
    std::vector<double> out;
    for (const std::vector<double>& r : runs)
        if (std::optional<double> m = tail_mean(r)) out.push_back(*m);
    return out;
}

}  // namespace

NumericsCheck compare_losses(const std::vector<std::vector<double>>& baseline,
                             const std::vector<std::vector<double>>& candidate) {
    const std::vector<double> b = means(baseline), c = means(candidate);
    if (c.empty()) return {false, "its loss could not be read (no backward() on a scalar was seen)"};
    for (double m : c)
        if (!std::isfinite(m)) return {false, "its loss became NaN or infinite"};
    if (b.empty()) return {false, "the baseline's loss could not be read to compare with"};
    double bsum = 0, csum = 0;
    for (double m : b) bsum += m;
    for (double m : c) csum += m;
    const double bmean = bsum / static_cast<double>(b.size()), cmean = csum / static_cast<double>(c.size());
    const auto [lo, hi] = std::minmax_element(b.begin(), b.end());
    // The baseline's own spread, at least 2 % of the loss (a seeded script repeats its losses exactly).
    const double tolerance = std::max({3 * (*hi - *lo), 0.02 * std::fabs(bmean), 1e-6});
    const double off = cmean - bmean;
    if (std::fabs(off) > tolerance)
        return {false, fmt::format("its loss went {} ({:.4g} against {:.4g}; the baseline's trials differ by {:.2g})",
                                   off > 0 ? "up" : "down", cmean, bmean, *hi - *lo)};
    return {true, fmt::format("its loss stayed within {:.2g} of the baseline's ({:.4g} against {:.4g})", tolerance,
                              cmean, bmean)};
}

}  // namespace baton::tune
