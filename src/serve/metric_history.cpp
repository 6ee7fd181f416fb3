#include "serve/metric_history.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "serve/node_metrics.hpp"

namespace baton::serve {

MetricHistory::MetricHistory(double keep_seconds, double interval_seconds)
    : keep_ms_(static_cast<std::int64_t>(keep_seconds * 1000)),
      times_(static_cast<std::size_t>(std::ceil(keep_seconds / std::max(interval_seconds, 0.01))) + 1, 0) {}

void MetricHistory::add(const Snapshot& s) {
    const std::int64_t t = s.time_unix_ms;
    const std::int64_t minute = t / 60000;
    MutexLock lock(mutex_);
    const std::size_t ring = times_.size();
    const std::size_t slot = samples_ % ring;
    times_[slot] = t;
    ++samples_;
    std::size_t at = 0;  // position in order_
    for_each_metric(s, true, [&](std::string_view metric, const std::string& subject, double v) BATON_REQUIRES(mutex_) {
        Series* x = nullptr;
        if (at < order_.size() && order_[at].first->first == metric && order_[at].first->second == subject) {
            x = order_[at].second;
        } else {
            auto [it, fresh] = series_.try_emplace({std::string(metric), subject});
            if (fresh) {
                it->second.values.assign(ring, std::numeric_limits<float>::quiet_NaN());
                it->second.stored = metric != "cpu.core_utilization_percent";
            }
            x = &it->second;
            order_.resize(at);  // the order changed from here on: learn it again
            order_.emplace_back(&it->first, x);
        }
        ++at;
        x->values[slot] = static_cast<float>(v);
        x->last_sample = samples_;
        if (x->open.minute != minute) {
            if (x->open.n && x->stored) x->finished.push_back(x->open);
            x->open = Minute{minute, 0, v, v, 0};
        }
        x->open.sum += v;
        x->open.min = std::min(x->open.min, v);
        x->open.max = std::max(x->open.max, v);
        ++x->open.n;
    });
    order_.resize(std::min(order_.size(), at));
    // The slot a series had no value for this time holds none now; series without any value in the
    // whole ring go (a disk unplugged, a process's GPU gone).
    bool erased = false;
    for (auto it = series_.begin(); it != series_.end();) {
        Series& x = it->second;
        if (x.last_sample != samples_) x.values[slot] = std::numeric_limits<float>::quiet_NaN();
        if (samples_ - x.last_sample >= ring && x.finished.empty()) {
            it = series_.erase(it);
            erased = true;
        } else {
            ++it;
        }
    }
    if (erased) order_.clear();
}

std::vector<Point> MetricHistory::range(const std::string& metric, const std::string& subject, std::int64_t from_ms,
                                        std::int64_t to_ms) const {
    MutexLock lock(mutex_);
    std::vector<Point> out;
    auto it = series_.find({metric, subject});
    if (it == series_.end() || samples_ == 0) return out;
    const std::size_t ring = times_.size();
    const std::size_t held = static_cast<std::size_t>(std::min<std::uint64_t>(samples_, ring));
    const std::int64_t newest = times_[(samples_ - 1) % ring];
    from_ms = std::max(from_ms, newest - keep_ms_);
    for (std::size_t i = 0; i < held; ++i) {  // oldest first
        const std::size_t slot = (samples_ - held + i) % ring;
        const std::int64_t t = times_[slot];
        const float v = it->second.values[slot];
        if (t < from_ms || t > to_ms || std::isnan(v)) continue;
        out.push_back({t, v});
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> MetricHistory::series() const {
    MutexLock lock(mutex_);
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(series_.size());
    for (const auto& [key, x] : series_)
        if (samples_ - x.last_sample < times_.size()) out.push_back(key);  // has a value in the ring
    return out;
}

std::vector<store::MetricMinute> MetricHistory::take_finished_minutes(std::int64_t now_ms) {
    const std::int64_t now_minute = now_ms / 60000;
    MutexLock lock(mutex_);
    std::vector<store::MetricMinute> out;
    for (auto& [key, x] : series_) {
        // A minute is also finished when the series stopped getting values in it.
        if (x.open.n && x.open.minute < now_minute && x.stored) {
            x.finished.push_back(x.open);
            x.open = Minute{};
        }
        for (const Minute& m : x.finished)
            out.push_back({key.first, key.second, m.minute, m.sum / static_cast<double>(m.n), m.min, m.max});
        x.finished.clear();
    }
    return out;
}

}  // namespace baton::serve
