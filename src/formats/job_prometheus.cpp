// The job series: which job each GPU and process serves, as info series that PromQL joins on
// (`* on(gpu, uuid) group_left(job_id, user) baton_gpu_job_info`), not as labels on every series,
// which would multiply them and rename them whenever a job starts. Listed in docs/metrics.md.
#include <algorithm>

#include "core/printable.hpp"
#include "sample/process_lookup.hpp"
#include "formats/snapshot_prometheus.hpp"

namespace baton::formats {

namespace {

// The families this file writes, each declared once: a sample can only name one of these.
constexpr MetricFamily kBatonJobInfo{
    "baton_job_info", "gauge",
    "One series per job with processes here (Slurm job, pod, container; a service or session on a GPU); "
    "always 1."};
constexpr MetricFamily kBatonJobProcesses{"baton_job_processes", "gauge", "Processes of a job on this machine."};
constexpr MetricFamily kBatonJobAllocatedCpus{"baton_job_allocated_cpus", "gauge",
                                              "Cores allocated to a job on this node (Slurm)."};
constexpr MetricFamily kBatonJobAllocatedMemoryBytes{"baton_job_allocated_memory_bytes", "gauge",
                                                     "Memory allocated to a job on this node (Slurm)."};
constexpr MetricFamily kBatonJobAllocatedGpus{"baton_job_allocated_gpus", "gauge",
                                              "GPUs allocated to a job on this node, where the scheduler says."};
constexpr MetricFamily kBatonGpuJobInfo{
    "baton_gpu_job_info", "gauge",
    "A job that uses a GPU (in_use=\"true\") or was allocated it and has no process on it (\"false\"); "
    "always 1."};
constexpr MetricFamily kBatonProcessJobInfo{"baton_process_job_info", "gauge",
                                            "The job of a process that has series of its own; always 1."};

using Labels = Exposition::Labels;

void add(Labels& l, const char* name, const std::string& value) {
    if (!value.empty()) l.push_back({name, printable(value)});
}

// The names every job series carries: its label (job_id), kind, and what the node knows of it.
Labels job_labels(const JobInfo& j) {
    Labels l{{"job_id", j.label}, {"kind", enum_name(j.kind)}};
    add(l, "name", j.name);
    add(l, "user", j.user);
    add(l, "account", j.account);
    add(l, "partition", j.partition);
    add(l, "namespace", j.pod_namespace);
    return l;
}

bool has(const std::vector<unsigned>& v, unsigned x) {
    return std::binary_search(v.begin(), v.end(), x);
}

}  // namespace

void append_job_series(const Snapshot& s, const std::vector<std::uint32_t>& pids, Exposition& e) {
    e.family(kBatonJobInfo);
    e.family(kBatonJobProcesses);
    e.family(kBatonJobAllocatedCpus);
    e.family(kBatonJobAllocatedMemoryBytes);
    e.family(kBatonJobAllocatedGpus);
    e.family(kBatonGpuJobInfo);
    e.family(kBatonProcessJobInfo);
    for (const JobInfo& j : s.jobs) {
        const Labels id{{"job_id", j.label}};
        e.sample(kBatonJobInfo, job_labels(j), 1.0);
        e.sample(kBatonJobProcesses, id, static_cast<double>(j.pids.size()));
        e.sample(kBatonJobAllocatedCpus, id, j.allocated_cpus);
        e.sample(kBatonJobAllocatedMemoryBytes, id, j.allocated_memory_bytes);
        if (!j.allocated_gpus.empty())
            e.sample(kBatonJobAllocatedGpus, id, static_cast<double>(j.allocated_gpus.size()));
        for (const GpuInfo& g : s.gpus) {
            const bool uses = has(j.gpus, g.index);
            if (!uses && !has(j.allocated_gpus, g.index)) continue;
            Labels l{{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}};
            for (auto& kv : job_labels(j)) l.push_back(std::move(kv));
            l.push_back({"in_use", uses ? "true" : "false"});
            e.sample(kBatonGpuJobInfo, l, 1.0);
        }
    }
    for (std::uint32_t pid : pids) {
        const ProcessInfo* p = find_process(s, pid);
        const JobInfo* j = p ? find_job(s, p->job) : nullptr;
        if (!j) continue;
        Labels l{{"pid", std::to_string(pid)}, {"job_id", j->label}, {"kind", enum_name(j->kind)}};
        add(l, "step", p->job.step);
        add(l, "container_id", p->job.container_id);
        e.sample(kBatonProcessJobInfo, l, 1.0);
    }
}

const JobInfo* only_job_on_gpu(const Snapshot& s, unsigned gpu) {
    const JobInfo* found = nullptr;
    for (const JobInfo& j : s.jobs) {
        if (!has(j.gpus, gpu) && !has(j.allocated_gpus, gpu)) continue;
        if (found) return nullptr;
        found = &j;
    }
    return found;
}

}  // namespace baton::formats
