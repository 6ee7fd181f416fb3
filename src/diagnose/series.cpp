#include "diagnose/series.hpp"

#include <algorithm>

namespace baton::diagnose {

const char* severity_name(Severity s) {
    switch (s) {
        case Severity::warning:
            return "warning";
        case Severity::critical:
            return "critical";
        case Severity::info:
            break;
    }
    return "info";
}

double seconds(const Snapshot& s) {
    if (s.monotonic_seconds) return *s.monotonic_seconds;
    return static_cast<double>(s.time_unix_ms) / 1000.0;
}

Series series(const Window& w, const std::function<std::optional<double>(const Snapshot&)>& value,
              const std::function<bool(double)>& breach) {
    return series_of(
        w, [](const Snapshot& s) { return seconds(s); }, value, breach);
}

bool sustained(const Series& s, const Thresholds& t) {
    return s.samples > 0 && s.span() >= t.sustained_share * t.window_seconds && s.share() >= t.sustained_share;
}

Evidence evidence(const std::string& metric, const Series& s, const std::string& threshold) {
    Evidence e;
    e.metric = metric;
    e.average = s.average;
    e.minimum = s.minimum;
    e.maximum = s.maximum;
    e.threshold = threshold;
    e.breach_share = s.share();
    e.samples = s.samples;
    return e;
}

const GpuInfo* gpu_at(const Snapshot& s, unsigned index) {
    for (const GpuInfo& g : s.gpus)
        if (g.index == index && !g.stale && !g.error) return &g;
    return nullptr;
}

bool gpu_is_fed(const Window& w, unsigned index, const Thresholds& t) {
    constexpr double kFedShare = 0.1;
    std::size_t active = 0;
    for (const Snapshot& s : w) {
        const GpuInfo* g = gpu_at(s, index);
        if (!g) continue;
        active += (g->utilization_percent.value_or(0) >= t.gpu_fed_percent ||
                   g->sm_activity_percent.value_or(0) >= t.gpu_fed_percent)
                      ? 1
                      : 0;
    }
    return active > 0 && static_cast<double>(active) >= kFedShare * static_cast<double>(w.size());
}

std::vector<unsigned> gpu_indices(const Window& w) {
    std::vector<unsigned> out;
    for (const Snapshot& s : w)
        for (const GpuInfo& g : s.gpus)
            if (std::find(out.begin(), out.end(), g.index) == out.end()) out.push_back(g.index);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace baton::diagnose
