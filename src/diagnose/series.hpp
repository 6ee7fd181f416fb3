// Helpers for rules: a metric's values across the window, and whether a condition held
// "sustained" (core/thresholds.hpp: over at least sustained_share of window_seconds, in at
// least sustained_share of the samples).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/thresholds.hpp"
#include "diagnose/finding.hpp"
#include "sample/snapshot.hpp"

namespace baton::diagnose {

using Window = std::vector<Snapshot>;  // in time order

struct Series {
    std::size_t samples = 0;  // snapshots where the metric had a value
    std::size_t breaches = 0;
    double average = 0, minimum = 0, maximum = 0;
    double first_time = 0, last_time = 0;  // seconds (Unix) of the first and last sample with a value
    double first = 0, last = 0;            // the first and last values
    double span() const { return samples ? last_time - first_time : 0; }
    double share() const { return samples ? static_cast<double>(breaches) / static_cast<double>(samples) : 0; }
};

// The same over any time-ordered samples: `time` gives a sample's Unix seconds, `value` its metric
// (nullopt: not known there), `breach` whether a value breaches. (baton top's IndicatorWindow keeps
// light samples instead of snapshots and uses this directly.)
template <typename Samples, typename Time, typename Value, typename Breach>
Series series_of(const Samples& samples, Time time, Value value, Breach breach) {
    Series r;
    double sum = 0;
    for (const auto& s : samples) {
        const std::optional<double> v = value(s);
        if (!v) continue;
        if (r.samples == 0) {
            r.minimum = r.maximum = r.first = *v;
            r.first_time = time(s);
        }
        r.minimum = *v < r.minimum ? *v : r.minimum;
        r.maximum = *v > r.maximum ? *v : r.maximum;
        r.last = *v;
        r.last_time = time(s);
        sum += *v;
        ++r.samples;
        r.breaches += breach(*v) ? 1 : 0;
    }
    if (r.samples) r.average = sum / static_cast<double>(r.samples);
    return r;
}

// Seconds since the Unix epoch of a snapshot.
double seconds(const Snapshot& s);

// `value` gives the metric of one snapshot (nullopt: not known there); `breach` says whether a
// value breaches.
Series series(const Window& w, const std::function<std::optional<double>(const Snapshot&)>& value,
              const std::function<bool(double)>& breach);

// The breaches held over the window as the thresholds define "sustained".
bool sustained(const Series& s, const Thresholds& t);

Evidence evidence(const std::string& metric, const Series& s, const std::string& threshold);

// The GPU with this index in a snapshot, or null.
const GpuInfo* gpu_at(const Snapshot& s, unsigned index);
// Whether the GPU does measurable work in the window: utilisation or SM activity at least
// gpu_fed_percent in at least a tenth of the samples. A GPU that does no work is not starved by
// its input pipeline (input_bound, io_bound), and its held memory is idle (gpu_idle_held), even
// when the holder is busy on the CPU (a notebook kernel running pandas). The floor is low: a real
// input-bound loop on an H200 read 3 % (docs/device-runs/).
bool gpu_is_fed(const Window& w, unsigned index, const Thresholds& t);
// Every GPU index seen in the window, in order.
std::vector<unsigned> gpu_indices(const Window& w);

}  // namespace baton::diagnose
