// The indicator table applied: where a value sits against its best range and alarm level
// (core/thresholds.hpp), and which alarms hold over a window of snapshots. baton top colours
// with levels and shows the breaches on its status line; the diagnosis rules build on both.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "core/thresholds.hpp"
#include "diagnose/series.hpp"
#include "sample/snapshot.hpp"

namespace baton::diagnose {

enum class Level {
    unknown,   // no value
    low,       // below the best range: room to grow (only GPU memory has a lower bound)
    best,      // within the best range
    elevated,  // above the best range, not yet an alarm
    alarm,     // past the alarm level
};

// "unknown", "low", "best", "elevated", "alarm".
const char* level_name(Level l);

Level gpu_memory_level(const Thresholds& t, double used_percent);
Level cpu_level(const Thresholds& t, double utilization_percent);
Level swap_level(const Thresholds& t, double bytes_per_second);
Level iowait_level(const Thresholds& t, double percent);

// GPU memory used as a percent of total, when both are known.
std::optional<double> gpu_memory_percent(const GpuInfo& g);

// What GPU memory is judged on: a GPU, or, on a GPU in MIG mode, each of its MIG devices by its own
// memory (a process on a 2g.20gb slice runs out at 20 GB, whatever the rest of the GPU holds). MIG
// devices that share a GPU instance share its memory and are judged once.
struct MemorySubject {
    std::string subject;                   // "gpu:0", or "gpu:0/mig:3" (the GPU instance id)
    std::string label;                     // "GPU0", or "GPU0 MIG 2g.20gb (GI 3)"
    std::optional<double> percent;         // used / total, when both are known
    std::optional<unsigned> gpu_instance;  // the MIG device's GPU instance
};
std::vector<MemorySubject> memory_subjects(const GpuInfo& g);
// A MIG device's memory used as a percent of its own total, when both are known.
std::optional<double> mig_memory_percent(const MigInstance& m);
// The percent a GPU's memory colour comes from: the fullest of its memory subjects (its own on a
// GPU without MIG).
std::optional<double> judged_memory_percent(const GpuInfo& g);
// "3g.40gb" from "NVIDIA H100 80GB HBM3 MIG 3g.40gb": the MIG profile, else the whole name.
std::string mig_profile(const std::string& name);
// Swap traffic in + out, when both are known.
std::optional<double> swap_traffic(const SwapStats& s);

// Where one indicator of the table stands over a window: "GPU0 memory 75 % (best 60-85 %, alarm
// above 90 %): best". What `baton diagnose` prints beside its findings.
struct IndicatorSummary {
    std::string indicator;    // "gpu_memory", "cpu_load", "swap_traffic", "io_wait"
    std::string subject;      // "gpu:0", "gpu:0/mig:3" or "host"
    double value = 0;         // the window's average (GPU memory: its peak)
    std::string unit;         // "%" or "B/s"
    std::string best, alarm;  // "60-85 %", "> 90 %"
    Level level = Level::unknown;
};

std::vector<IndicatorSummary> summarize_indicators(const std::vector<Snapshot>& window, const Thresholds& t);

// An alarm of the indicator table that holds now.
struct Breach {
    std::string rule;     // gpu_memory_high, cpu_load_high, swap_active, io_wait_high
    std::string subject;  // "gpu:0" or "host"
    std::string text;     // one line for a status bar, e.g. "GPU0 memory 93 % (> 90 %)"
};

// The last `window_seconds` of the values the table judges. GPU memory is judged on the newest
// snapshot, I/O wait on the window's average, CPU and swap as "sustained": the samples must
// span at least sustained_share of the window and at least sustained_share of them breach.
class IndicatorWindow {
  public:
    explicit IndicatorWindow(Thresholds t) : t_(t) {}

    // Adds a snapshot (times from its time_unix_ms) and drops samples older than the window.
    void add(const Snapshot& s);
    std::vector<Breach> breaches() const;
    const Thresholds& thresholds() const { return t_; }

  private:
    struct Sample {
        double time = 0;
        std::optional<double> cpu, iowait, swap;
        std::vector<MemorySubject> gpu_memory;  // those with a percent
    };
    // One metric of the kept samples, against an alarm level (series.hpp does the counting).
    template <typename Get>
    Series metric(Get get, double alarm) const;

    Thresholds t_;
    std::deque<Sample> samples_;
};

}  // namespace baton::diagnose
