// Rules on the training loop's own measurements (the Python hook's step events): input_bound
// when the loop measurably waits for data, and step_time_unstable. Where steps exist they win
// over the system-metric guess of rules_pipeline.cpp: the loop knows whether it waited.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/percentile.hpp"
#include "diagnose/process_trees.hpp"
#include "diagnose/loader_advice.hpp"
#include "diagnose/rules.hpp"

namespace baton::diagnose {

namespace {

// Fewer steps than this in the window say too little (one slow first step, say).
constexpr std::size_t kMinSteps = 5;
// step_time_unstable compares the slow tail with the median: it needs a tail.
constexpr std::size_t kMinStepsForSpread = 20;

// The GPU whose compute processes include `pid` in the newest snapshot, if any.
std::optional<unsigned> gpu_of(const Snapshot& s, std::uint32_t pid) {
    for (const GpuInfo& g : s.gpus)
        for (const GpuProcess& gp : g.processes)
            if (gp.our_pid() == pid) return g.index;
    return std::nullopt;
}

// GPUs that run a compute process; 0 on a machine without GPU.
unsigned gpus_in_use(const Snapshot& s) {
    unsigned n = 0;
    for (const GpuInfo& g : s.gpus)
        n += std::any_of(g.processes.begin(), g.processes.end(),
                         [](const GpuProcess& p) { return p.type == GpuProcessType::compute; })
                 ? 1
                 : 0;
    return n;
}

// The subject of a trainer's findings: its GPU when it has one, else the process.
std::string subject_of(const Snapshot& s, std::uint32_t pid) {
    if (std::optional<unsigned> g = gpu_of(s, pid)) return fmt::format("gpu:{}", *g);
    return fmt::format("pid:{}", pid);
}

void input_bound(const Window& w, const Thresholds& t, std::uint32_t pid, const std::vector<const StepSample*>& steps,
                 std::vector<Finding>& out) {
    double wait = 0, total = 0;
    std::size_t breaching = 0;
    double lo = 100, hi = 0;
    for (const StepSample* s : steps) {
        wait += s->wait_ms;
        total += s->step_ms;
        const double share = s->step_ms > 0 ? 100.0 * s->wait_ms / s->step_ms : 0;
        lo = std::min(lo, share);
        hi = std::max(hi, share);
        breaching += share > t.data_wait_percent ? 1 : 0;
    }
    if (total <= 0) return;
    const double share = 100.0 * wait / total;
    if (share <= t.data_wait_percent) return;
    const Snapshot& last = w.back();
    std::size_t workers = 0;  // the most seen in the window (they exit before the trainer)
    for (const Snapshot& x : w) {
        const auto tree = process_and_descendants(x, pid);
        workers = std::max(workers, tree.empty() ? 0 : tree.size() - 1);
    }
    const std::optional<unsigned> gpu = gpu_of(last, pid);
    Series host = series(
        w, [](const Snapshot& x) { return x.cpu.total.utilization_percent; },
        [&](double v) { return v > t.cpu_alarm_percent; });
    const std::string who =
        gpu ? fmt::format("GPU{}'s training loop (pid {})", *gpu, pid) : fmt::format("The training loop (pid {})", pid);
    LoaderAdvice advice = loader_advice(fmt::format("{} waits for batches {:.0f} % of each step", who, share),
                                        static_cast<unsigned>(workers), last.host.cpu_count, gpus_in_use(last),
                                        sustained(host, t), gpu.has_value());
    const Severity severity = share >= t.data_wait_warning_percent ? Severity::warning : Severity::info;
    Finding f = make_finding("input_bound", severity, subject_of(last, pid),
                             fmt::format("{} waits for data {:.0f} % of its step time ({} steps, {} DataLoader "
                                         "worker(s); measured by the baton hook)",
                                         who, share, steps.size(), workers),
                             advice.fix);
    f.snippet = advice.snippet;
    Evidence e;
    e.metric = "steps.data_wait_percent";
    e.average = share;  // of the summed step time, so long steps weigh more
    e.minimum = lo;
    e.maximum = hi;
    e.threshold = fmt::format("> {:g} (of step time)", t.data_wait_percent);
    e.breach_share = static_cast<double>(breaching) / static_cast<double>(steps.size());
    e.samples = steps.size();
    f.evidence.push_back(e);
    if (gpu) {
        Series util = series(
            w,
            [&](const Snapshot& x) -> std::optional<double> {
                for (const GpuInfo& g : x.gpus)
                    if (g.index == *gpu && !g.stale && !g.error) return g.utilization_percent;
                return std::nullopt;
            },
            [&](double v) { return v < t.gpu_starved_percent; });
        if (util.samples)
            f.evidence.push_back(
                evidence("gpu.utilization_percent", util, fmt::format("< {:g}", t.gpu_starved_percent)));
    }
    out.push_back(std::move(f));
}

// Judged on each step's time without its data wait: waiting for batches is input_bound's to judge
// (an input-bound loop's steps alternate between a prefetched batch and a wait, seen on an H200).
void step_time_unstable(const Window& w, const Thresholds& t, std::uint32_t pid,
                        const std::vector<const StepSample*>& steps, std::vector<Finding>& out) {
    if (steps.size() < kMinStepsForSpread) return;
    std::vector<double> ms;
    for (const StepSample* s : steps) ms.push_back(s->step_ms - s->wait_ms);
    const double median = percentile(ms, 50), p95 = percentile(ms, 95);
    if (median <= 0 || p95 <= t.step_time_unstable_ratio * median) return;
    Finding f = make_finding(
        "step_time_unstable", Severity::warning, subject_of(w.back(), pid),
        fmt::format("pid {}'s step time (without its data wait) varies: median {:.1f} ms, p95 {:.1f} ms ({:.1f} x "
                    "the median, over {} steps)",
                    pid, median, p95, p95 / median, steps.size()),
        "One step in twenty takes more than twice the usual: look for work that runs every N steps on the "
        "training process (checkpointing, logging, evaluation: move it to a thread or make it asynchronous), "
        "Python's garbage collector (gc.freeze() after start-up), a straggler rank in DDP (each rank waits for "
        "the slowest at every all-reduce), or batches of uneven size or sequence length (bucket by length).");
    Evidence e;
    e.metric = "steps.compute_time_ms";
    e.average = median;  // the median, as the threshold is stated against it
    e.minimum = *std::min_element(ms.begin(), ms.end());
    e.maximum = *std::max_element(ms.begin(), ms.end());
    e.threshold = fmt::format("p95 > {:g} x median", t.step_time_unstable_ratio);
    e.breach_share = static_cast<double>(std::count_if(
                         ms.begin(), ms.end(), [&](double v) { return v > t.step_time_unstable_ratio * median; })) /
                     static_cast<double>(ms.size());
    e.samples = ms.size();
    f.evidence.push_back(e);
    out.push_back(std::move(f));
}

}  // namespace

void step_rules(const Window& w, const Thresholds& t, const StepWindow& steps, std::vector<Finding>& out) {
    if (w.empty()) return;
    std::map<std::uint32_t, std::vector<const StepSample*>> by_pid;
    for (const StepSample& s : steps) by_pid[s.pid].push_back(&s);
    for (const auto& [pid, mine] : by_pid) {
        if (mine.size() < kMinSteps) continue;
        // Sustained, as for the other rules: the steps span most of the window. The first seconds of
        // a run (CUDA context, cuDNN autotuning, the first batches) are not its steady state.
        const double span_s = static_cast<double>(mine.back()->t_ms - mine.front()->t_ms) / 1000.0;
        if (span_s < t.sustained_share * t.window_seconds) continue;
        input_bound(w, t, pid, mine, out);
        step_time_unstable(w, t, pid, mine, out);
    }
}

}  // namespace baton::diagnose
