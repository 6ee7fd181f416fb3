// The last minutes of every machine metric at full resolution, in memory, and the minutes they
// complete (average, minimum, maximum) for the history database. Fed by the agent's sampling
// thread, read by the HTTP thread: it has its own lock.
//
// Memory: the samples' times are one ring shared by every series, and each series a ring of floats
// as long (NaN where it had no value), allocated whole when the series first appears. So the agent's
// memory is flat from the start instead of creeping up over the first 15 minutes: 4 bytes a point,
// 250 series at 1 s for 15 minutes is 0.9 MB.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/thread_safety.hpp"
#include "sample/snapshot.hpp"
#include "store/history.hpp"

namespace baton::serve {

struct Point {
    std::int64_t t_ms = 0;
    float value = 0;
};

class MetricHistory {
  public:
    // Keeps `keep_seconds` of samples taken every `interval_seconds` (samples that come late take
    // no more room: the ring holds keep / interval + 1 of them, and ranges stop at keep_seconds).
    explicit MetricHistory(double keep_seconds, double interval_seconds = 1);

    // Adds one snapshot's values (for_each_metric, per-core included).
    void add(const Snapshot& s);

    // The points of one series within [from_ms, to_ms], in time order.
    std::vector<Point> range(const std::string& metric, const std::string& subject, std::int64_t from_ms,
                             std::int64_t to_ms) const;
    // How far back it keeps points.
    double keep_seconds() const { return static_cast<double>(keep_ms_) / 1000.0; }
    // Every series held: (metric, subject).
    std::vector<std::pair<std::string, std::string>> series() const;

    // The minutes that ended before `now_ms` and were not yet taken, each series' average,
    // minimum and maximum over its samples in that minute (per-core series left out).
    std::vector<store::MetricMinute> take_finished_minutes(std::int64_t now_ms);

  private:
    struct Minute {
        std::int64_t minute = -1;
        double sum = 0, min = 0, max = 0;
        std::size_t n = 0;
    };
    struct Series {
        std::vector<float> values;  // one per slot of times_; NaN: no value at that sample
        std::uint64_t last_sample = 0;
        Minute open;                   // the minute being filled
        std::vector<Minute> finished;  // complete, waiting for take_finished_minutes
        bool stored = true;            // false: memory only (per-core)
    };
    using Key = std::pair<std::string, std::string>;  // (metric, subject)

    mutable Mutex mutex_;  // the sampling thread adds, the HTTP thread reads
    const std::int64_t keep_ms_;
    std::vector<std::int64_t> times_ BATON_GUARDED_BY(mutex_);  // a ring: slot (samples_ - 1) % size is the newest
    std::uint64_t samples_ BATON_GUARDED_BY(mutex_) = 0;        // added so far
    std::map<Key, Series> series_ BATON_GUARDED_BY(mutex_);
    // The series in the order the last snapshot gave them: the next one gives them in the same
    // order, so each value finds its series with a comparison instead of a map lookup.
    std::vector<std::pair<const Key*, Series*>> order_ BATON_GUARDED_BY(mutex_);
};

}  // namespace baton::serve
