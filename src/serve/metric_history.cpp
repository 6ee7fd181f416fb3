#include "serve/metric_history.hpp"

#include <algorithm>

#include "serve/node_metrics.hpp"

namespace baton::serve {

void MetricHistory::add(const Snapshot& s) {
    const std::int64_t t = s.time_unix_ms;
    const std::int64_t minute = t / 60000;
    std::lock_guard lock(mutex_);
    for_each_metric(s, true, [&](std::string_view metric, const std::string& subject, double v) {
        Series& x = series_[{std::string(metric), subject}];
        x.stored = metric != "cpu.core_utilization_percent";
        x.points.push_back({t, static_cast<float>(v)});
        if (x.open.minute != minute) {
            if (x.open.n && x.stored) x.finished.push_back(x.open);
            x.open = Minute{minute, 0, v, v, 0};
        }
        x.open.sum += v;
        x.open.min = std::min(x.open.min, v);
        x.open.max = std::max(x.open.max, v);
        ++x.open.n;
    });
    // Forget points older than the window, and series that have had none for that long (a
    // disk unplugged, a process's GPU gone).
    for (auto it = series_.begin(); it != series_.end();) {
        auto& pts = it->second.points;
        while (!pts.empty() && pts.front().t_ms < t - keep_ms_) pts.pop_front();
        if (pts.empty() && it->second.finished.empty())
            it = series_.erase(it);
        else
            ++it;
    }
}

std::vector<Point> MetricHistory::range(const std::string& metric, const std::string& subject, std::int64_t from_ms,
                                        std::int64_t to_ms) const {
    std::lock_guard lock(mutex_);
    auto it = series_.find({metric, subject});
    if (it == series_.end()) return {};
    const auto& pts = it->second.points;
    auto first =
        std::lower_bound(pts.begin(), pts.end(), from_ms, [](const Point& p, std::int64_t t) { return p.t_ms < t; });
    std::vector<Point> out;
    for (auto p = first; p != pts.end() && p->t_ms <= to_ms; ++p) out.push_back(*p);
    return out;
}

std::int64_t MetricHistory::oldest_ms() const {
    std::lock_guard lock(mutex_);
    std::int64_t oldest = -1;
    for (const auto& [key, x] : series_)
        if (!x.points.empty() && (oldest < 0 || x.points.front().t_ms < oldest)) oldest = x.points.front().t_ms;
    return oldest;
}

std::vector<std::pair<std::string, std::string>> MetricHistory::series() const {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [key, x] : series_)
        if (!x.points.empty()) out.push_back(key);
    return out;
}

std::vector<MetricMinute> MetricHistory::take_finished_minutes(std::int64_t now_ms) {
    const std::int64_t now_minute = now_ms / 60000;
    std::lock_guard lock(mutex_);
    std::vector<MetricMinute> out;
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
