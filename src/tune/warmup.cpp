#include "tune/warmup.hpp"

#include <algorithm>
#include <cmath>

#include "core/percentile.hpp"

namespace baton::tune {

namespace {

double mean_of(const std::vector<TrialStep>& steps, std::size_t from, std::size_t n) {
    double sum = 0;
    for (std::size_t i = from; i < from + n; ++i) sum += steps[i].step_ms;
    return sum / static_cast<double>(n);
}

}  // namespace

std::optional<Warmup> find_warmup(const std::vector<TrialStep>& steps, const WarmupRule& rule) {
    const std::size_t w = std::max<std::size_t>(1, rule.window);
    for (std::size_t i = 1; i + 2 * w <= steps.size(); ++i) {
        const double a = mean_of(steps, i, w), b = mean_of(steps, i + w, w);
        if (b > 0 && std::fabs(a - b) <= rule.tolerance * b) return Warmup{i, true};
        if (b <= 0 && a <= 0) return Warmup{i, true};
    }
    if (steps.size() >= rule.give_up) return Warmup{steps.size() / 3, false};
    return std::nullopt;
}

std::optional<Warmup> warmup_at_end(const std::vector<TrialStep>& steps, const WarmupRule& rule) {
    if (std::optional<Warmup> w = find_warmup(steps, rule)) return w;
    if (steps.size() < 4) return std::nullopt;
    return Warmup{std::max<std::size_t>(1, steps.size() / 3), false};
}

TrialMeasure measure(const std::vector<TrialStep>& steps, std::size_t first, std::size_t count) {
    TrialMeasure m;
    if (first >= steps.size()) return m;
    const std::size_t end = std::min(steps.size(), first + count);
    double ms = 0, wait = 0;
    std::int64_t samples = 0;
    bool every_said = true;
    std::vector<double> times;
    for (std::size_t i = first; i < end; ++i) {
        ms += steps[i].step_ms;
        wait += steps[i].wait_ms;
        times.push_back(steps[i].step_ms);
        if (steps[i].samples)
            samples += *steps[i].samples;
        else
            every_said = false;
    }
    m.steps = end - first;
    if (ms > 0) {
        m.steps_per_second = static_cast<double>(m.steps) * 1000.0 / ms;
        m.data_wait_share = wait / ms;
        if (every_said) m.samples_per_second = static_cast<double>(samples) * 1000.0 / ms;
    }
    m.median_step_ms = percentile(times, 50);
    return m;
}

}  // namespace baton::tune
