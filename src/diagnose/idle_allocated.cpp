#include "diagnose/idle_allocated.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "diagnose/rules.hpp"

namespace baton::diagnose {

namespace {

// Idle: no kernel ran in NVML's last sample period (and no SM activity where GPM reads it). A GPU
// without a utilisation reading (MIG mode, an error) is not judged.
std::optional<bool> idle(const GpuInfo& g) {
    if (!g.utilization_percent || g.lost || g.stale) return std::nullopt;
    return *g.utilization_percent < 1 && g.sm_activity_percent.value_or(0) < 1;
}

std::string duration_text(double minutes) {
    if (minutes < 120) return fmt::format("{:.0f} minutes", minutes);
    return fmt::format("{:.1f} hours", minutes / 60);
}

}  // namespace

std::vector<Finding> IdleAllocations::update(const Snapshot& s, double minutes) {
    std::vector<Finding> out;
    std::map<std::pair<std::string, unsigned>, std::int64_t> now;
    for (const JobInfo& j : s.jobs)
        for (unsigned index : j.allocated_gpus) {
            const GpuInfo* g = gpu_at(s, index);
            const auto key = std::make_pair(j.label, index);
            const auto it = idle_since_.find(key);
            const std::optional<bool> is_idle = g ? idle(*g) : std::nullopt;
            if (!is_idle) {
                if (it != idle_since_.end()) now[key] = it->second;  // no reading this time: not judged
                continue;
            }
            if (!*is_idle) continue;
            const std::int64_t since = it == idle_since_.end() ? s.time_unix_ms : it->second;
            now[key] = since;
            const double idle_minutes = static_cast<double>(s.time_unix_ms - since) / 60000.0;
            if (minutes <= 0 || idle_minutes < minutes) continue;
            const bool used = std::find(j.gpus.begin(), j.gpus.end(), index) != j.gpus.end();
            Finding f = make_finding(
                "gpu_idle_allocated", Severity::warning, fmt::format("gpu:{}", index),
                fmt::format("{}{} has held GPU{}, allocated to it, at 0 % for {}{}", j.label,
                            j.user.empty() ? "" : " (" + j.user + ")", index, duration_text(idle_minutes),
                            used ? "" : " without a process on it"),
                "Others wait for this GPU while it does nothing. Ask the job's owner: a finished job still "
                "holding its allocation (an interactive session, a notebook, a script waiting on input) should "
                "end (scancel, kubectl delete pod); a job that does not use GPUs should ask for none; one that "
                "only needs a GPU now and then fits a shared or MIG partition.");
            f.job = j.label;
            Evidence e;
            e.metric = "gpu.utilization_percent";
            e.threshold = fmt::format("< 1 for {:g} minutes while allocated", minutes);
            e.maximum = 0;
            e.samples = 1;
            f.evidence.push_back(e);
            out.push_back(std::move(f));
        }
    // A job gone, a GPU no longer allocated, or one that worked: counted afresh.
    idle_since_ = std::move(now);
    return out;
}

}  // namespace baton::diagnose
