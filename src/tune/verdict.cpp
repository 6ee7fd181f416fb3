#include "tune/verdict.hpp"

#include <algorithm>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/percentile.hpp"

namespace baton::tune {

namespace {

SettingVerdict describe(const std::vector<double>& values) {
    SettingVerdict v;
    v.values = values;
    if (values.empty()) return v;
    v.median = percentile(values, 50);
    v.low = *std::min_element(values.begin(), values.end());
    v.high = *std::max_element(values.begin(), values.end());
    v.spread = v.median > 0 ? (v.high - v.low) / v.median : 0;
    return v;
}

}  // namespace

Verdict judge(const std::vector<std::vector<double>>& values, const VerdictRule& rule) {
    Verdict out;
    for (const std::vector<double>& v : values) out.settings.push_back(describe(v));
    if (out.settings.empty()) return out;
    const SettingVerdict& base = out.settings[0];
    for (std::size_t i = 1; i < out.settings.size(); ++i) {
        SettingVerdict& s = out.settings[i];
        if (s.values.empty()) {
            s.why = "no trial ran to the end";
            continue;
        }
        if (base.values.empty()) {
            s.why = "the baseline never ran to the end";
            continue;
        }
        s.gain = base.median > 0 ? s.median / base.median - 1 : 0;
        const double noise = std::max(base.spread, s.spread);
        if (base.values.size() < 2 || s.values.size() < 2) {
            s.why = "one trial only: the noise is unknown (a larger --budget repeats each)";
        } else if (s.gain <= 0) {
            s.why = "not faster";
        } else if (s.gain <= rule.min_gain) {
            s.why = fmt::format("{:+.1f} %: below the {:.0f} % worth a change", 100 * s.gain, 100 * rule.min_gain);
        } else if (s.gain <= noise || s.low <= base.high) {
            s.why = fmt::format("{:+.1f} % is within the noise ({:.1f} %)", 100 * s.gain, 100 * noise);
        } else {
            s.wins = true;
        }
    }
    for (std::size_t i = 1; i < out.settings.size(); ++i)
        if (out.settings[i].wins && (!out.winner || out.settings[i].median > out.settings[*out.winner].median))
            out.winner = i;
    return out;
}

}  // namespace baton::tune
