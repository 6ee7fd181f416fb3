// A job's energy while it runs: the total-energy counter of each GPU it uses (NVML, Volta and later:
// joules since the driver loaded) and the CPU packages' (RAPL, the whole machine's CPUs), read at every
// sample, kept as one running total since the first readings; the joules between two moments are
// interpolated between samples (the training steps' span: joules per step and per sample).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "store/run_energy.hpp"

namespace baton::run {

class EnergyMeter {
  public:
    // One sample: each job GPU's counter (index, joules since the driver loaded) and the CPU packages'
    // total (the sampler's, absent when unreadable).
    void add(std::int64_t t_ms, const std::vector<std::pair<unsigned, double>>& gpus, std::optional<double> cpu);

    std::optional<double> gpu_joules() const;  // since each GPU's first reading
    std::optional<double> cpu_joules() const;
    // The GPUs' and CPU packages' joules between t0 and t1 (interpolated; nullopt when the span is not
    // within the readings or nothing was read).
    std::optional<double> joules_between(std::int64_t t0_ms, std::int64_t t1_ms) const;

    // The run's figures: its totals, and over the steps' span [first_step_ms, last_step_ms] the joules
    // per step (`steps` in that span) and per sample (`samples` in it, when known), from the part of the
    // span the readings cover (at least half of it).
    store::RunEnergy figures(std::int64_t first_step_ms, std::int64_t last_step_ms, double steps,
                             std::optional<double> samples) const;

    // Past this many points the series keeps every other one (a long job's memory stays flat).
    static constexpr std::size_t kMaxPoints = 4096;

  private:
    struct Point {
        std::int64_t t_ms;
        double joules;  // GPUs and CPU packages since their first readings
    };
    std::map<unsigned, double> gpu_first_, gpu_last_;
    std::optional<double> cpu_first_, cpu_last_;
    std::vector<Point> series_;
};

}  // namespace baton::run
