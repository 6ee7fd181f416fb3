// The last minutes of every machine metric at full resolution, in memory, and the minutes they
// complete (average, minimum, maximum) for the history database. Fed by the agent's sampling
// thread, read by the HTTP thread: it has its own lock.
// Memory: 12 bytes a point; 80 series at 1 s for 15 minutes is about 0.9 MB.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sample/snapshot.hpp"
#include "store/history.hpp"

namespace baton::serve {

struct Point {
    std::int64_t t_ms = 0;
    float value = 0;
};

class MetricHistory {
  public:
    explicit MetricHistory(double keep_seconds) : keep_ms_(static_cast<std::int64_t>(keep_seconds * 1000)) {}

    // Adds one snapshot's values (for_each_metric, per-core included).
    void add(const Snapshot& s);

    // The points of one series within [from_ms, to_ms], in time order.
    std::vector<Point> range(const std::string& metric, const std::string& subject, std::int64_t from_ms,
                             std::int64_t to_ms) const;
    // How far back it keeps points.
    double keep_seconds() const { return static_cast<double>(keep_ms_) / 1000.0; }
    // The oldest time held (ms), or -1 when empty.
    std::int64_t oldest_ms() const;
    // Every series held: (metric, subject).
    std::vector<std::pair<std::string, std::string>> series() const;

    // The minutes that ended before `now_ms` and were not yet taken, each series' average,
    // minimum and maximum over its samples in that minute (per-core series left out).
    std::vector<MetricMinute> take_finished_minutes(std::int64_t now_ms);

  private:
    struct Minute {
        std::int64_t minute = -1;
        double sum = 0, min = 0, max = 0;
        std::size_t n = 0;
    };
    struct Series {
        std::deque<Point> points;
        Minute open;                   // the minute being filled
        std::vector<Minute> finished;  // complete, waiting for take_finished_minutes
        bool stored = true;            // false: memory only (per-core)
    };
    mutable std::mutex mutex_;
    std::int64_t keep_ms_;
    std::map<std::pair<std::string, std::string>, Series> series_;
};

}  // namespace baton::serve
