#include "run/energy.hpp"

#include <algorithm>

namespace baton::run {

void EnergyMeter::add(std::int64_t t_ms, const std::vector<std::pair<unsigned, double>>& gpus,
                      std::optional<double> cpu) {
    bool any = false;
    for (const auto& [index, joules] : gpus) {
        // A counter that went back (the driver reloaded) starts again from there.
        auto first = gpu_first_.find(index);
        if (first == gpu_first_.end() || joules < gpu_last_[index]) {
            const double done = first == gpu_first_.end() ? 0 : gpu_last_[index] - first->second;
            gpu_first_[index] = joules - done;
        }
        gpu_last_[index] = joules;
        any = true;
    }
    if (cpu) {
        if (!cpu_first_) cpu_first_ = *cpu;
        cpu_last_ = *cpu;
        any = true;
    }
    if (!any) return;
    double total = 0;
    for (const auto& [index, last] : gpu_last_) total += last - gpu_first_[index];
    if (cpu_last_) total += *cpu_last_ - *cpu_first_;
    series_.push_back({t_ms, total});
    if (series_.size() > kMaxPoints) {
        std::vector<Point> kept;
        kept.reserve(series_.size() / 2 + 1);
        for (std::size_t i = 0; i < series_.size(); i += 2) kept.push_back(series_[i]);
        if (kept.back().t_ms != series_.back().t_ms) kept.push_back(series_.back());
        series_ = std::move(kept);
    }
}

std::optional<double> EnergyMeter::gpu_joules() const {
    if (gpu_last_.empty()) return std::nullopt;
    double sum = 0;
    for (const auto& [index, last] : gpu_last_) sum += last - gpu_first_.at(index);
    return sum;
}

std::optional<double> EnergyMeter::cpu_joules() const {
    if (!cpu_last_) return std::nullopt;
    return *cpu_last_ - *cpu_first_;
}

std::optional<double> EnergyMeter::joules_between(std::int64_t t0_ms, std::int64_t t1_ms) const {
    if (series_.size() < 2 || t1_ms < t0_ms) return std::nullopt;
    // The span is clamped to the readings: steps before the first sample or after the last are
    // counted at the nearest reading's rate of zero growth, which a short run's summary says.
    auto at = [&](std::int64_t t) {
        if (t <= series_.front().t_ms) return series_.front().joules;
        if (t >= series_.back().t_ms) return series_.back().joules;
        auto hi = std::lower_bound(series_.begin(), series_.end(), t,
                                   [](const Point& p, std::int64_t v) { return p.t_ms < v; });
        auto lo = hi - 1;
        const double f = static_cast<double>(t - lo->t_ms) / static_cast<double>(hi->t_ms - lo->t_ms);
        return lo->joules + f * (hi->joules - lo->joules);
    };
    return at(t1_ms) - at(t0_ms);
}

store::RunEnergy EnergyMeter::figures(std::int64_t first_step_ms, std::int64_t last_step_ms, double steps,
                                      std::optional<double> samples) const {
    store::RunEnergy e;
    e.gpu_joules = gpu_joules();
    e.cpu_joules = cpu_joules();
    // Over the part of the steps' span the readings cover (the last step often ends after the last
    // sample), with its share of the steps and samples: the steps came at a steady rate. Less than half
    // of the span covered says nothing per step.
    if (steps <= 0 || last_step_ms <= first_step_ms || series_.size() < 2) return e;
    const std::int64_t t0 = std::max(first_step_ms, series_.front().t_ms);
    const std::int64_t t1 = std::min(last_step_ms, series_.back().t_ms);
    const double share = static_cast<double>(t1 - t0) / static_cast<double>(last_step_ms - first_step_ms);
    if (share < 0.5) return e;
    if (std::optional<double> j = joules_between(t0, t1)) {
        e.joules_per_step = *j / (steps * share);
        if (samples && *samples > 0) e.joules_per_sample = *j / (*samples * share);
    }
    return e;
}

}  // namespace baton::run
