#include "diagnose/indicators.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/printable.hpp"

namespace baton::diagnose {

const char* level_name(Level l) {
    switch (l) {
        case Level::low:
            return "low";
        case Level::best:
            return "best";
        case Level::elevated:
            return "elevated";
        case Level::alarm:
            return "alarm";
        case Level::unknown:
            break;
    }
    return "unknown";
}

namespace {

// For indicators whose best range starts at 0.
Level upper_level(double v, double best_max, double alarm) {
    if (v > alarm) return Level::alarm;
    if (v > best_max) return Level::elevated;
    return Level::best;
}

std::string rate_text(double bytes_per_second) {
    if (bytes_per_second >= 1e6) return fmt::format("{:.1f} MB/s", bytes_per_second / 1e6);
    return fmt::format("{:.0f} kB/s", bytes_per_second / 1e3);
}

}  // namespace

Level gpu_memory_level(const Thresholds& t, double used_percent) {
    if (used_percent < t.gpu_memory_best_min_percent) return Level::low;
    return upper_level(used_percent, t.gpu_memory_best_max_percent, t.gpu_memory_alarm_percent);
}

Level cpu_level(const Thresholds& t, double utilization_percent) {
    return upper_level(utilization_percent, t.cpu_best_max_percent, t.cpu_alarm_percent);
}

Level swap_level(const Thresholds& t, double bytes_per_second) {
    return upper_level(bytes_per_second, t.swap_best_max_bytes_per_second, t.swap_alarm_bytes_per_second);
}

Level iowait_level(const Thresholds& t, double percent) {
    return upper_level(percent, t.iowait_best_max_percent, t.iowait_alarm_percent);
}

std::optional<double> gpu_memory_percent(const GpuInfo& g) {
    if (!g.memory_used_bytes || !g.memory_total_bytes || *g.memory_total_bytes == 0) return std::nullopt;
    return 100.0 * static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*g.memory_total_bytes);
}

std::string mig_profile(const std::string& name) {
    const std::size_t at = name.rfind("MIG ");
    return printable(at == std::string::npos ? name : name.substr(at + 4));
}

std::vector<MemorySubject> memory_subjects(const GpuInfo& g) {
    std::vector<MemorySubject> out;
    if (!g.mig_mode.value_or(false) || g.mig_instances.empty()) {
        out.push_back({fmt::format("gpu:{}", g.index), fmt::format("GPU{}", g.index), gpu_memory_percent(g), {}});
        return out;
    }
    for (const MigInstance& m : g.mig_instances) {
        if (std::any_of(out.begin(), out.end(),
                        [&](const MemorySubject& x) { return x.gpu_instance == m.gpu_instance_id; }))
            continue;
        MemorySubject s;
        s.subject = fmt::format("gpu:{}/mig:{}", g.index, m.gpu_instance_id);
        s.label = fmt::format("GPU{} MIG {} (GI {})", g.index, mig_profile(m.name), m.gpu_instance_id);
        s.percent = mig_memory_percent(m);
        s.gpu_instance = m.gpu_instance_id;
        out.push_back(std::move(s));
    }
    return out;
}

std::optional<double> mig_memory_percent(const MigInstance& m) {
    if (!m.memory_used_bytes || !m.memory_total_bytes || *m.memory_total_bytes == 0) return std::nullopt;
    return 100.0 * static_cast<double>(*m.memory_used_bytes) / static_cast<double>(*m.memory_total_bytes);
}

std::optional<double> judged_memory_percent(const GpuInfo& g) {
    std::optional<double> worst;
    for (const MemorySubject& s : memory_subjects(g))
        if (s.percent) worst = std::max(worst.value_or(0), *s.percent);
    return worst;
}

std::optional<double> swap_traffic(const SwapStats& s) {
    if (!s.in_bytes_per_second || !s.out_bytes_per_second) return std::nullopt;
    return *s.in_bytes_per_second + *s.out_bytes_per_second;
}

std::vector<IndicatorSummary> summarize_indicators(const std::vector<Snapshot>& w, const Thresholds& t) {
    std::vector<IndicatorSummary> out;
    auto average = [&](auto get) -> std::optional<double> {
        const Series s = series_of(w, seconds, get, [](double) { return false; });
        if (s.samples == 0) return std::nullopt;
        return s.average;
    };
    // Each GPU's memory (each MIG device's, on a GPU in MIG mode) by its peak, in GPU order.
    std::vector<std::pair<std::pair<unsigned, unsigned>, std::string>> order;  // ((index, GI + 1), subject)
    std::map<std::string, double> peaks;
    for (const Snapshot& s : w)
        for (const GpuInfo& g : s.gpus) {
            if (g.stale) continue;
            for (const MemorySubject& m : memory_subjects(g)) {
                if (!m.percent) continue;
                auto [it, fresh] = peaks.emplace(m.subject, *m.percent);
                if (fresh)
                    order.push_back({{g.index, m.gpu_instance ? *m.gpu_instance + 1 : 0}, m.subject});
                else
                    it->second = std::max(it->second, *m.percent);
            }
        }
    std::sort(order.begin(), order.end());
    for (const auto& [key, subject] : order) {
        const double peak = peaks[subject];
        out.push_back({"gpu_memory", subject, peak, "%",
                       fmt::format("{:g}-{:g} %", t.gpu_memory_best_min_percent, t.gpu_memory_best_max_percent),
                       fmt::format("> {:g} %", t.gpu_memory_alarm_percent), gpu_memory_level(t, peak)});
    }
    if (auto v = average([](const Snapshot& s) { return s.cpu.total.utilization_percent; }))
        out.push_back({"cpu_load", "host", *v, "%", fmt::format("<= {:g} %", t.cpu_best_max_percent),
                       fmt::format("> {:g} % sustained", t.cpu_alarm_percent), cpu_level(t, *v)});
    if (auto v = average([](const Snapshot& s) { return swap_traffic(s.swap); }))
        out.push_back({"swap_traffic", "host", *v, "B/s",
                       fmt::format("<= {}", rate_text(t.swap_best_max_bytes_per_second)),
                       fmt::format("> {} sustained", rate_text(t.swap_alarm_bytes_per_second)), swap_level(t, *v)});
    if (auto v = average([](const Snapshot& s) { return s.cpu.total.iowait_percent; }))
        out.push_back({"io_wait", "host", *v, "%", fmt::format("<= {:g} %", t.iowait_best_max_percent),
                       fmt::format("> {:g} %", t.iowait_alarm_percent), iowait_level(t, *v)});
    return out;
}

void IndicatorWindow::add(const Snapshot& s) {
    Sample x;
    x.time = seconds(s);
    x.cpu = s.cpu.total.utilization_percent;
    x.iowait = s.cpu.total.iowait_percent;
    x.swap = swap_traffic(s.swap);
    for (const GpuInfo& g : s.gpus)
        if (!g.stale)
            for (MemorySubject& m : memory_subjects(g))
                if (m.percent) x.gpu_memory.push_back(std::move(m));
    // A clock stepped backwards would leave samples "from the future": start over.
    if (!samples_.empty() && x.time < samples_.back().time) samples_.clear();
    samples_.push_back(std::move(x));
    while (samples_.front().time < samples_.back().time - t_.window_seconds) samples_.pop_front();
}

template <typename Get>
Series IndicatorWindow::metric(Get get, double alarm) const {
    return series_of(
        samples_, [](const Sample& x) { return x.time; }, get, [alarm](double v) { return v > alarm; });
}

std::vector<Breach> IndicatorWindow::breaches() const {
    std::vector<Breach> out;
    if (samples_.empty()) return out;
    for (const MemorySubject& m : samples_.back().gpu_memory)
        if (gpu_memory_level(t_, *m.percent) == Level::alarm)
            out.push_back(
                {"gpu_memory_high", m.subject,
                 fmt::format("{} memory {:.0f} % (> {:g} %)", m.label, *m.percent, t_.gpu_memory_alarm_percent)});
    const Series cpu = metric([](const Sample& x) { return x.cpu; }, t_.cpu_alarm_percent);
    if (sustained(cpu, t_))
        out.push_back({"cpu_load_high", "host",
                       fmt::format("CPU {:.0f} % over {:.0f} s (> {:g} % sustained)", cpu.average, cpu.span(),
                                   t_.cpu_alarm_percent)});
    const Series swap = metric([](const Sample& x) { return x.swap; }, t_.swap_alarm_bytes_per_second);
    if (sustained(swap, t_))
        out.push_back({"swap_active", "host",
                       fmt::format("swap {} over {:.0f} s (> {} sustained)", rate_text(swap.average), swap.span(),
                                   rate_text(t_.swap_alarm_bytes_per_second))});
    const Series io = metric([](const Sample& x) { return x.iowait; }, t_.iowait_alarm_percent);
    if (io.samples > 0 && io.average > t_.iowait_alarm_percent)
        out.push_back({"io_wait_high", "host",
                       fmt::format("I/O wait {:.1f} % (> {:g} % of CPU time)", io.average, t_.iowait_alarm_percent)});
    return out;
}

}  // namespace baton::diagnose
