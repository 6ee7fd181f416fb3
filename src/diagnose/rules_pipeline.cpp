// Pipeline rules: a GPU that waits for its input, because the CPUs that prepare it are saturated
// (input_bound) or because they wait for storage (io_bound). Thresholds: core/thresholds.hpp.
#include <algorithm>
#include <set>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "diagnose/process_trees.hpp"
#include "diagnose/loader_advice.hpp"
#include "diagnose/rules.hpp"

namespace baton::diagnose {

namespace {

// GPUs that run a job (a compute process) in the newest snapshot, with that job's trainer pids.
struct Job {
    unsigned gpu = 0;
    std::vector<std::uint32_t> pids;  // the GPU's compute processes
};

std::vector<Job> gpu_jobs(const Snapshot& s) {
    std::vector<Job> out;
    for (const GpuInfo& g : s.gpus) {
        if (g.stale || g.error) continue;
        Job j;
        j.gpu = g.index;
        for (const GpuProcess& gp : g.processes)
            if (gp.type == GpuProcessType::compute) j.pids.push_back(gp.our_pid());
        if (!j.pids.empty()) out.push_back(std::move(j));
    }
    return out;
}

Series gpu_utilization(const Window& w, unsigned index, double starved) {
    return series(
        w,
        [&](const Snapshot& s) -> std::optional<double> {
            const GpuInfo* g = gpu_at(s, index);
            return g ? g->utilization_percent : std::nullopt;
        },
        [&](double v) { return v < starved; });
}

// Below this CPU % a trainer's descendant is not counted as part of its input pipeline: a starved
// pipeline's workers are never idle, and helpers (a logger's service process, a compile worker pool)
// would otherwise dilute the workers' figure.
constexpr double kWorkerBusyPercent = 10;

struct Pipeline {
    std::optional<double> saturation;  // percent of the cores its processes can use
    std::size_t workers = 0;           // the trainers' descendants (DataLoader workers and helpers)
};

// How busy the job's input pipeline is. With busy descendants (DataLoader workers), only they count:
// the trainer mostly waits for the next batch, and averaging it in hid a starved pipeline (on an H200,
// docs/device-runs/, two workers near 100 % of a core and an idle-waiting trainer read as 70 %). With
// none (num_workers=0) the trainer loads its data itself, and its own CPU is the pipeline's.
Pipeline pipeline(const Snapshot& s, const Job& j) {
    const std::set<std::uint32_t> trainers(j.pids.begin(), j.pids.end());
    std::set<std::uint32_t> seen;
    double trainer_cpu = 0, worker_cpu = 0;
    std::size_t trainers_seen = 0, busy_workers = 0;
    Pipeline out;
    for (std::uint32_t pid : j.pids)
        for (const ProcessInfo* p : process_and_descendants(s, pid)) {
            if (!seen.insert(p->pid).second) continue;
            const bool trainer = trainers.count(p->pid) > 0;
            out.workers += trainer ? 0 : 1;
            if (!p->cpu_percent) continue;
            if (trainer) {
                trainer_cpu += *p->cpu_percent;
                ++trainers_seen;
            } else if (*p->cpu_percent >= kWorkerBusyPercent) {
                worker_cpu += *p->cpu_percent;
                ++busy_workers;
            }
        }
    const std::size_t n = busy_workers > 0 ? busy_workers : trainers_seen;
    if (n == 0 || s.host.cpu_count == 0) return out;
    const double cores = static_cast<double>(std::min<std::size_t>(n, s.host.cpu_count));
    out.saturation = (busy_workers > 0 ? worker_cpu : trainer_cpu) / cores;
    return out;
}

void input_bound(const Window& w, const Thresholds& t, const StepWindow& steps, std::vector<Finding>& out) {
    const Snapshot& last = w.back();
    const std::vector<Job> jobs = gpu_jobs(last);
    const unsigned gpus_in_use = static_cast<unsigned>(std::max<std::size_t>(1, jobs.size()));
    Series host = series(
        w, [](const Snapshot& x) { return x.cpu.total.utilization_percent; },
        [&](double v) { return v > t.cpu_alarm_percent; });
    for (const Job& j : jobs) {
        // A trainer that reports its steps is judged by its measured data wait (rules_steps.cpp).
        if (std::any_of(steps.begin(), steps.end(), [&](const StepSample& s) {
                return std::find(j.pids.begin(), j.pids.end(), s.pid) != j.pids.end();
            }))
            continue;
        Series util = gpu_utilization(w, j.gpu, t.gpu_starved_percent);
        if (util.samples == 0 || util.average >= t.gpu_starved_percent || !gpu_is_fed(w, j.gpu, t)) continue;
        Series job = series(
            w, [&](const Snapshot& x) { return pipeline(x, j).saturation; },
            [&](double v) { return v >= t.tree_cpu_saturated_percent; });
        const bool job_saturated = sustained(job, t);
        const bool host_saturated = sustained(host, t);
        if (!job_saturated && !host_saturated) continue;

        // The most workers seen in the window: at the end of a run they exit before the trainer.
        unsigned workers = 0;
        for (const Snapshot& x : w) workers = std::max(workers, static_cast<unsigned>(pipeline(x, j).workers));
        LoaderAdvice advice = loader_advice(fmt::format("GPU{} waits for batches", j.gpu), workers, last.host.cpu_count,
                                            gpus_in_use, host_saturated, /*to_gpu=*/true);
        Finding f = make_finding(
            "input_bound", Severity::warning, fmt::format("gpu:{}", j.gpu),
            fmt::format("GPU{} is {:.0f} % busy on average while {}", j.gpu, util.average,
                        job_saturated ? fmt::format("the input pipeline feeding it (pid {} and {} worker(s)) keeps its "
                                                    "CPUs {:.0f} % busy",
                                                    j.pids.front(), workers, job.average)
                                      : fmt::format("the host CPUs are {:.0f} % busy", host.average)),
            advice.fix);
        f.snippet = advice.snippet;
        f.evidence.push_back(
            evidence("gpu.utilization_percent", util, fmt::format("< {:g} (average)", t.gpu_starved_percent)));
        if (job.samples)
            f.evidence.push_back(evidence("job.pipeline_cpu_saturation_percent", job,
                                          fmt::format(">= {:g}", t.tree_cpu_saturated_percent)));
        if (host.samples)
            f.evidence.push_back(evidence("cpu.utilization_percent", host, fmt::format("> {:g}", t.cpu_alarm_percent)));
        out.push_back(std::move(f));
    }
}

void io_bound(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    const Snapshot& last = w.back();
    std::vector<unsigned> starved;
    Series first_util;
    for (const Job& j : gpu_jobs(last)) {
        Series util = gpu_utilization(w, j.gpu, t.gpu_starved_percent);
        if (util.samples && util.average < t.gpu_starved_percent && gpu_is_fed(w, j.gpu, t)) {
            if (starved.empty()) first_util = util;
            starved.push_back(j.gpu);
        }
    }
    if (starved.empty()) return;
    Series iowait = series(
        w, [](const Snapshot& x) { return x.cpu.total.iowait_percent; },
        [&](double v) { return v > t.iowait_alarm_percent; });
    if (iowait.samples == 0 || iowait.average <= t.iowait_alarm_percent) return;
    // The busiest disk.
    std::set<std::string> names;
    for (const Snapshot& s : w)
        for (const DiskStats& d : s.disks) names.insert(d.name);
    std::string disk;
    Series busiest;
    for (const std::string& name : names) {
        Series busy = series(
            w,
            [&](const Snapshot& s) -> std::optional<double> {
                for (const DiskStats& d : s.disks)
                    if (d.name == name) return d.busy_percent;
                return std::nullopt;
            },
            [&](double v) { return v > t.disk_busy_percent; });
        if (sustained(busy, t) && busy.average > busiest.average) {
            busiest = busy;
            disk = name;
        }
    }
    if (disk.empty()) return;
    std::string gpus;
    for (unsigned g : starved) gpus += (gpus.empty() ? "GPU" : ", GPU") + std::to_string(g);
    Finding f = make_finding(
        "io_bound", Severity::warning, "disk:" + disk,
        fmt::format("{} wait for data while {} is {:.0f} % busy and I/O wait is {:.1f} %", gpus, disk, busiest.average,
                    iowait.average),
        "Storage is the bottleneck. Cache the dataset in RAM (page cache, /dev/shm) or on local NVMe, read fewer "
        "and larger files (tar shards with WebDataset, LMDB, or a few big numpy arrays instead of many small "
        "images), read sequentially, and overlap reads with more DataLoader workers.");
    f.evidence.push_back(
        evidence("gpu.utilization_percent", first_util, fmt::format("< {:g} (average)", t.gpu_starved_percent)));
    f.evidence.push_back(
        evidence("cpu.iowait_percent", iowait, fmt::format("> {:g} (average)", t.iowait_alarm_percent)));
    f.evidence.push_back(evidence("disk.busy_percent", busiest, fmt::format("> {:g}", t.disk_busy_percent)));
    out.push_back(std::move(f));
}

}  // namespace

void pipeline_rules(const Window& w, const Thresholds& t, const StepWindow& steps, std::vector<Finding>& out) {
    input_bound(w, t, steps, out);
    io_bound(w, t, out);
    step_rules(w, t, steps, out);
}

}  // namespace baton::diagnose
