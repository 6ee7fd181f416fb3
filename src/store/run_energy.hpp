// A run's energy as the history keeps it (runs.energy, schema 15) and the summary, `baton compare`,
// the report and `baton tune` show it: the job's GPUs' energy from NVML's total-energy counter, the
// CPU packages' from RAPL (the whole machine's CPUs: RAPL counts per package, not per process), and
// per training step and per sample over the steps' span.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace baton {
class JsonWriter;
}

namespace baton::store {

struct RunEnergy {
    std::optional<double> gpu_joules, cpu_joules;              // over the whole run
    std::optional<double> joules_per_step, joules_per_sample;  // GPUs and CPU packages, over the steps
    bool empty() const { return !gpu_joules && !cpu_joules; }
};

// {"gpu_joules":..,"cpu_joules":..,"joules_per_step":..,"joules_per_sample":..} (absent keys: not measured);
// "" for an empty one.
std::string to_json(const RunEnergy& e);
// The same object as a value of `w` (the run's --summary-json "energy").
void write_energy_json(JsonWriter& w, const RunEnergy& e);
// The same back; an empty one for "" or text that is not what baton wrote.
RunEnergy run_energy_from_json(std::string_view text);

// "GPUs 1.2 kJ, CPU packages 310 J; 2.10 J per step, 0.525 J per sample" (the parts there are).
std::string energy_text(const RunEnergy& e);
// "412 J", "1.2 kJ", "3.4 MJ".
std::string joules_text(double joules);

}  // namespace baton::store
