// The last minutes of what baton top draws as graphs: per GPU its utilisation, SM activity (GPM)
// and memory use, and the host's CPU total and memory use, one value per snapshot.
//
// The collector thread fills it from the first snapshot on, whether graphs are shown or not, so
// `G` shows the past at once. It is not serve's MetricHistory on purpose: that one keeps every
// metric (per core, per disk, minutes for the database) for the API; top needs five series per
// GPU at most, and its cost is what users compare with btop's.
//
// Memory: every series is a ring of floats allocated whole when its subject first appears (NaN
// where a sample had no value), so memory is flat from the start: 8 GPUs x 3 series + 2 host
// series x 600 samples x 4 bytes = 62 KB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sample/snapshot.hpp"

namespace baton::ui {

enum class GraphSeries : std::uint8_t { gpu_utilization, gpu_sm_activity, gpu_memory, cpu, memory };

class GraphHistory {
  public:
    // Keeps the newest `capacity` samples (at least 2).
    explicit GraphHistory(std::size_t capacity = 600);

    // Adds one sample of every series from `s`. A GPU that is not in `s` gets no value for it.
    void add(const Snapshot& s);

    std::size_t capacity() const { return capacity_; }
    // Samples held: min(added so far, capacity).
    std::size_t size() const;

    // The newest `n` values of a series into `out`, oldest first (fewer when fewer are held; NaN
    // where the sample had no value). `gpu_uuid` names the GPU of the gpu_* series.
    void recent(GraphSeries which, std::string_view gpu_uuid, std::size_t n, std::vector<float>& out) const;

    // Bytes its rings hold (the figure docs/performance.md quotes).
    std::size_t bytes() const;

  private:
    struct Gpu {
        std::string uuid;
        std::vector<float> utilization, sm_activity, memory;
    };
    const std::vector<float>* ring(GraphSeries which, std::string_view gpu_uuid) const;

    std::size_t capacity_;
    std::uint64_t samples_ = 0;  // added so far; the newest is in slot (samples_ - 1) % capacity_
    std::vector<float> cpu_, memory_;
    std::vector<Gpu> gpus_;  // in order of first appearance: few, searched linearly
};

}  // namespace baton::ui
