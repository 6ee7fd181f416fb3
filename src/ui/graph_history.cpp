#include "ui/graph_history.hpp"

#include <algorithm>
#include <limits>

#include "diagnose/indicators.hpp"

namespace baton::ui {

namespace {

constexpr float kNone = std::numeric_limits<float>::quiet_NaN();

float value(const std::optional<double>& v) {
    return v ? static_cast<float>(*v) : kNone;
}

}  // namespace

GraphHistory::GraphHistory(std::size_t capacity)
    : capacity_(std::max<std::size_t>(2, capacity)), cpu_(capacity_, kNone), memory_(capacity_, kNone) {}

std::size_t GraphHistory::size() const {
    return static_cast<std::size_t>(std::min<std::uint64_t>(samples_, capacity_));
}

void GraphHistory::add(const Snapshot& s) {
    const std::size_t slot = samples_ % capacity_;
    ++samples_;
    cpu_[slot] = value(s.cpu.total.utilization_percent);
    memory_[slot] = s.memory.total_bytes ? static_cast<float>(100.0 * static_cast<double>(s.memory.used_bytes) /
                                                              static_cast<double>(s.memory.total_bytes))
                                         : kNone;
    for (Gpu& g : gpus_) g.utilization[slot] = g.sm_activity[slot] = g.memory[slot] = kNone;
    for (const GpuInfo& info : s.gpus) {
        auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Gpu& g) { return g.uuid == info.uuid; });
        if (it == gpus_.end()) {
            gpus_.push_back(Gpu{info.uuid, std::vector<float>(capacity_, kNone), std::vector<float>(capacity_, kNone),
                                std::vector<float>(capacity_, kNone)});
            it = gpus_.end() - 1;
        }
        if (info.stale || info.lost) continue;  // stale values are an earlier tick's: a gap, not a repeat
        it->utilization[slot] = value(info.utilization_percent);
        it->sm_activity[slot] = value(info.sm_activity_percent);
        it->memory[slot] = value(diagnose::gpu_memory_percent(info));
    }
}

const std::vector<float>* GraphHistory::ring(GraphSeries which, std::string_view gpu_uuid) const {
    if (which == GraphSeries::cpu) return &cpu_;
    if (which == GraphSeries::memory) return &memory_;
    auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Gpu& g) { return g.uuid == gpu_uuid; });
    if (it == gpus_.end()) return nullptr;
    if (which == GraphSeries::gpu_utilization) return &it->utilization;
    if (which == GraphSeries::gpu_sm_activity) return &it->sm_activity;
    return &it->memory;
}

void GraphHistory::recent(GraphSeries which, std::string_view gpu_uuid, std::size_t n, std::vector<float>& out) const {
    out.clear();
    const std::vector<float>* r = ring(which, gpu_uuid);
    n = std::min(n, size());
    if (!r) {
        out.assign(n, kNone);
        return;
    }
    out.reserve(n);
    for (std::uint64_t i = samples_ - n; i < samples_; ++i) out.push_back((*r)[i % capacity_]);
}

std::size_t GraphHistory::bytes() const {
    return (2 + 3 * gpus_.size()) * capacity_ * sizeof(float);
}

}  // namespace baton::ui
