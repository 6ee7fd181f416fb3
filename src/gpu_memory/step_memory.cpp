#include "gpu_memory/step_memory.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "gpu_memory/oom_message.hpp"

namespace baton::gpu_memory {

namespace {

constexpr std::size_t kStartupSteps = 2;  // the first step creates the optimizer's state
constexpr std::size_t kLeakMinSteps = 20;
constexpr double kLeakRiseShare = 0.5;  // a leak in every step, or every other (accumulation over two)

std::string gib(double bytes) {
    return torch_size(bytes);
}

diagnose::Evidence figures(const char* metric, const std::vector<double>& v, std::string threshold) {
    diagnose::Evidence e;
    e.metric = metric;
    e.samples = v.size();
    e.minimum = *std::min_element(v.begin(), v.end());
    e.maximum = *std::max_element(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    e.average = sum / static_cast<double>(v.size());
    e.threshold = std::move(threshold);
    return e;
}

void leak(const std::vector<StepAllocation>& steps, const StepMemoryContext& where, const Thresholds& t,
          std::vector<diagnose::Finding>& out) {
    if (steps.size() < kStartupSteps + kLeakMinSteps) return;
    std::vector<double> held;
    for (std::size_t i = kStartupSteps; i < steps.size(); ++i) held.push_back(static_cast<double>(steps[i].held));
    const double growth = held.back() - held.front();
    if (growth < t.gpu_memory_leak_bytes) return;
    std::size_t rises = 0;
    for (std::size_t i = 1; i < held.size(); ++i) rises += held[i] > held[i - 1] ? 1 : 0;
    if (static_cast<double>(rises) < kLeakRiseShare * static_cast<double>(held.size() - 1)) return;
    const double middle = held[held.size() / 2];
    if (middle - held.front() < growth / 4 || held.back() - middle < growth / 4) return;
    const double per_step = growth / static_cast<double>(held.size() - 1);
    std::string when;
    if (where.capacity) {
        const double room = static_cast<double>(*where.capacity) * 0.95 - static_cast<double>(where.others_bytes) -
                            static_cast<double>(steps.back().peak);
        when = room > 0 ? fmt::format("; at this rate {} is full in about {:.0f} steps", where.gpu, room / per_step)
                        : fmt::format("; {} is about full", where.gpu);
    }
    diagnose::Finding f;
    f.rule = "gpu_memory_leak";
    f.severity = diagnose::Severity::warning;
    f.subject = "job";
    f.summary = fmt::format("the memory kept across steps grew from {} to {} over {} steps ({:.1f} MiB a step){}",
                            gib(held.front()), gib(held.back()), held.size(), per_step / 1048576.0, when);
    f.recommendation =
        "A tensor is kept from each step: a loss summed without .item() (total_loss += loss keeps "
        "every step's graph), outputs or losses appended to a list, a cache that only grows. Keep "
        "numbers, not tensors (.item()), or .detach() what must stay; baton run --memory-history "
        "records the stacks that allocated what is kept.";
    f.snippet = "total_loss += loss.item()   # not: total_loss += loss";
    f.doc = "docs/findings.md#gpu_memory_leak";
    f.evidence.push_back(
        figures("cuda.allocated_at_step_end_bytes", held,
                fmt::format("growth > {:g} bytes, rising in {:g} of steps", t.gpu_memory_leak_bytes, kLeakRiseShare)));
    out.push_back(std::move(f));
}

void near_oom(const std::vector<StepAllocation>& steps, const StepMemoryContext& where, const Thresholds& t,
              std::vector<diagnose::Finding>& out) {
    if (!where.capacity || steps.empty()) return;
    const double usable = static_cast<double>(*where.capacity) - static_cast<double>(where.others_bytes);
    if (usable <= 0) return;
    auto top = std::max_element(steps.begin(), steps.end(),
                                [](const StepAllocation& a, const StepAllocation& b) { return a.peak < b.peak; });
    const double peak = static_cast<double>(top->peak);
    const double percent = 100.0 * peak / usable;
    if (percent < t.gpu_memory_alarm_percent) return;
    const bool critical = percent > t.gpu_memory_near_oom_percent;
    std::string next;
    if (top->samples > 0)
        if (const std::optional<BatchMemoryModel> m = batch_memory_model(steps)) {
            const double twice = m->fixed + m->per_sample * 2.0 * static_cast<double>(top->samples);
            const std::int64_t fits = largest_batch(*m, usable * 0.95);
            next = twice <= usable * 0.95
                       ? fmt::format("; a batch of {} (twice this one's) needs about {} and fits", 2 * top->samples,
                                     gib(twice))
                       : fmt::format("; a batch of {} (twice this one's) needs about {} and does not fit{}",
                                     2 * top->samples, gib(twice),
                                     fits > 0 ? fmt::format(": about {} does", fits) : std::string());
        }
    diagnose::Finding f;
    f.rule = "gpu_memory_near_oom";
    f.severity = critical ? diagnose::Severity::critical : diagnose::Severity::warning;
    f.subject = "job";
    f.summary = fmt::format("the peak step allocated {} of the {} {} leaves the job ({:.0f} %), {} of head-room{}",
                            gib(peak), gib(usable), where.gpu, percent, gib(std::max(0.0, usable - peak)), next);
    f.recommendation =
        "The next larger batch, a longer sequence or a fragmented cache runs out of memory. Keep the "
        "peak within 60-85 % of the GPU: mixed precision (torch.autocast) halves the activations; "
        "activation checkpointing trades compute for memory; a smaller micro-batch with gradient "
        "accumulation keeps the effective batch.";
    f.snippet = "with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n    loss = model(batch)";
    f.doc = "docs/findings.md#gpu_memory_near_oom";
    std::vector<double> shares;
    for (const StepAllocation& s : steps) shares.push_back(100.0 * static_cast<double>(s.peak) / usable);
    f.evidence.push_back(
        figures("cuda.step_peak_allocated_percent", shares,
                fmt::format("> {:g}", critical ? t.gpu_memory_near_oom_percent : t.gpu_memory_alarm_percent)));
    out.push_back(std::move(f));
}

}  // namespace

std::optional<BatchMemoryModel> batch_memory_model(const std::vector<StepAllocation>& steps) {
    std::map<std::int64_t, double> peak_of;  // batch size -> its highest peak
    const StepAllocation* top = nullptr;
    for (const StepAllocation& s : steps) {
        if (s.samples <= 0) continue;
        double& p = peak_of[s.samples];
        p = std::max(p, static_cast<double>(s.peak));
        if (!top || s.peak > top->peak) top = &s;
    }
    if (!top) return std::nullopt;
    if (peak_of.size() >= 2) {
        double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (const auto& [x, y] : peak_of) {
            const double bx = static_cast<double>(x);
            n += 1;
            sx += bx;
            sy += y;
            sxx += bx * bx;
            sxy += bx * y;
        }
        const double d = n * sxx - sx * sx;
        const double slope = d > 0 ? (n * sxy - sx * sy) / d : 0;
        if (slope > 0) return BatchMemoryModel{std::max(0.0, (sy - slope * sx) / n), slope, peak_of.size()};
    }
    if (top->peak <= top->held) return std::nullopt;
    return BatchMemoryModel{static_cast<double>(top->held),
                            static_cast<double>(top->peak - top->held) / static_cast<double>(top->samples), 1};
}

std::int64_t largest_batch(const BatchMemoryModel& m, double budget) {
    const double room = budget - m.fixed;
    if (m.per_sample <= 0 || room < m.per_sample) return 0;
    return static_cast<std::int64_t>(std::min(room / m.per_sample, 1e12));
}

std::vector<diagnose::Finding> judge_step_memory(const std::vector<StepAllocation>& steps,
                                                 const StepMemoryContext& where, const Thresholds& t) {
    std::vector<diagnose::Finding> out;
    leak(steps, where, t, out);
    near_oom(steps, where, t, out);
    return out;
}

}  // namespace baton::gpu_memory
