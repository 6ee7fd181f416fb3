// The families Princeton's jobstats queries, under the names and labels of the two exporters it
// is built on (plazonic/cgroup_exporter and plazonic/nvidia_gpu_prometheus_exporter), so that one
// baton serve --jobstats-compat replaces them: jobstats' PromQL (jobstats.py, get_job_stats) reads
//
//   cgroup_memory_total_bytes, cgroup_memory_rss_bytes (+ cgroup_memory_shmem_bytes),
//   cgroup_cpu_total_seconds, cgroup_cpus     {jobid="1234", step="", task=""}  (the job's totals)
//   nvidia_gpu_memory_total_bytes, nvidia_gpu_memory_used_bytes, nvidia_gpu_duty_cycle
//                                             {minor_number, jobid}  (or `and nvidia_gpu_jobId == 1234`)
//
// and adds the `cluster` label itself (a target label in the scrape config). Where baton differs
// from those exporters is written in docs/metrics.md, "jobstats compatibility".
#include <algorithm>

#include "core/printable.hpp"
#include "core/text_parse.hpp"
#include "sample/process_lookup.hpp"
#include "formats/snapshot_prometheus.hpp"

namespace baton::formats {

namespace {

// The families this file writes, each declared once: a sample can only name one of these.
constexpr MetricFamily kCgroupCpuTotalSeconds{"cgroup_cpu_total_seconds", "gauge",
                                              "Cumulative CPU total seconds for jobid"};
constexpr MetricFamily kCgroupCpuUserSeconds{"cgroup_cpu_user_seconds", "gauge",
                                             "Cumulative CPU user seconds for jobid"};
constexpr MetricFamily kCgroupCpuSystemSeconds{"cgroup_cpu_system_seconds", "gauge",
                                               "Cumulative CPU system seconds for jobid"};
constexpr MetricFamily kCgroupCpus{"cgroup_cpus", "gauge", "Number of CPUs in the jobid"};
constexpr MetricFamily kCgroupMemoryTotalBytes{"cgroup_memory_total_bytes", "gauge",
                                               "Memory total given to jobid in bytes"};
constexpr MetricFamily kCgroupMemoryUsedBytes{"cgroup_memory_used_bytes", "gauge", "Memory used in bytes"};
constexpr MetricFamily kCgroupMemoryRssBytes{"cgroup_memory_rss_bytes", "gauge", "Memory RSS used in bytes"};
constexpr MetricFamily kCgroupMemoryCacheBytes{"cgroup_memory_cache_bytes", "gauge", "Memory cache used in bytes"};
constexpr MetricFamily kCgroupMemoryShmemBytes{"cgroup_memory_shmem_bytes", "gauge", "Memory shmem used in bytes"};
constexpr MetricFamily kCgroupMemoryFailCount{"cgroup_memory_fail_count", "gauge", "Memory fail count"};
constexpr MetricFamily kCgroupUid{"cgroup_uid", "gauge", "Uid number of user running this job"};
constexpr MetricFamily kNvidiaGpuNumDevices{"nvidia_gpu_num_devices", "gauge", "Number of GPU devices"};
constexpr MetricFamily kNvidiaGpuMemoryUsedBytes{"nvidia_gpu_memory_used_bytes", "gauge",
                                                 "Memory used by the GPU device in bytes"};
constexpr MetricFamily kNvidiaGpuMemoryTotalBytes{"nvidia_gpu_memory_total_bytes", "gauge",
                                                  "Total memory of the GPU device in bytes"};
constexpr MetricFamily kNvidiaGpuDutyCycle{
    "nvidia_gpu_duty_cycle", "gauge",
    "Percent of time over the past sample period during which one or more kernels were executing on the "
    "GPU device"};
constexpr MetricFamily kNvidiaGpuPowerUsageMilliwatts{"nvidia_gpu_power_usage_milliwatts", "gauge",
                                                      "Power usage of the GPU device in milliwatts"};
constexpr MetricFamily kNvidiaGpuTemperatureCelsius{"nvidia_gpu_temperature_celsius", "gauge",
                                                    "Temperature of the GPU device in celsius"};
constexpr MetricFamily kNvidiaGpuJobid{"nvidia_gpu_jobId", "gauge",
                                       "JobId number of a job currently using this GPU as reported by Slurm"};
constexpr MetricFamily kNvidiaGpuJobuid{"nvidia_gpu_jobUid", "gauge", "UID number of user running jobs on this GPU"};

using Labels = Exposition::Labels;

// The uid the job runs as: its first process that is not Slurm's own step daemon (root's); -1
// when it has none here. (A number, not an optional: GCC's maybe-uninitialized misreads one here.)
std::int64_t job_uid(const Snapshot& s, const JobInfo& j) {
    std::int64_t any = -1;
    for (std::uint32_t pid : j.pids) {
        const ProcessInfo* p = find_process(s, pid);
        if (!p) continue;
        if (p->name != "slurmstepd") return p->uid;
        if (any < 0) any = p->uid;
    }
    return any;
}

// The one Slurm job that uses or was allocated GPU `gpu` (jobstats assumes no sharing).
const JobInfo* slurm_job_on_gpu(const Snapshot& s, unsigned gpu) {
    const JobInfo* j = only_job_on_gpu(s, gpu);
    return j && j->kind == JobKind::slurm ? j : nullptr;
}

void cgroup_families(Exposition& e) {
    e.family(kCgroupCpuTotalSeconds);
    e.family(kCgroupCpuUserSeconds);
    e.family(kCgroupCpuSystemSeconds);
    e.family(kCgroupCpus);
    e.family(kCgroupMemoryTotalBytes);
    e.family(kCgroupMemoryUsedBytes);
    e.family(kCgroupMemoryRssBytes);
    e.family(kCgroupMemoryCacheBytes);
    e.family(kCgroupMemoryShmemBytes);
    e.family(kCgroupMemoryFailCount);
    e.family(kCgroupUid);
}

void gpu_families(Exposition& e) {
    e.family(kNvidiaGpuNumDevices);
    e.family(kNvidiaGpuMemoryUsedBytes);
    e.family(kNvidiaGpuMemoryTotalBytes);
    e.family(kNvidiaGpuDutyCycle);
    e.family(kNvidiaGpuPowerUsageMilliwatts);
    e.family(kNvidiaGpuTemperatureCelsius);
    e.family(kNvidiaGpuJobid);
    e.family(kNvidiaGpuJobuid);
}

}  // namespace

void append_jobstats_compat(const Snapshot& s, const std::map<std::string, os::JobCgroupUsage>& cgroups,
                            Exposition& e) {
    cgroup_families(e);
    for (const JobInfo& j : s.jobs) {
        if (j.kind != JobKind::slurm) continue;
        const auto it = cgroups.find(j.id);
        if (it == cgroups.end()) continue;
        const os::JobCgroupUsage& u = it->second;
        const Labels l{{"jobid", j.id}, {"step", ""}, {"task", ""}};
        e.sample(kCgroupCpuTotalSeconds, l, u.cpu_seconds);
        e.sample(kCgroupCpuUserSeconds, l, u.cpu_user_seconds);
        e.sample(kCgroupCpuSystemSeconds, l, u.cpu_system_seconds);
        // A job whose cgroup has no cpuset of its own (ConstrainCores=no) has the cores Slurm gave it.
        e.sample(kCgroupCpus, l, u.cpus ? u.cpus : j.allocated_cpus);
        // No limit in the cgroup (ConstrainRAMSpace=no): what Slurm allocated, else the machine's,
        // never v1's 8 EiB "unlimited", which would make every job look empty.
        std::optional<std::uint64_t> total = u.memory_limit_bytes;
        if (!total) total = j.allocated_memory_bytes;
        if (!total && s.memory.total_bytes > 0) total = s.memory.total_bytes;
        e.sample(kCgroupMemoryTotalBytes, l, total);
        e.sample(kCgroupMemoryUsedBytes, l, u.memory_used_bytes);
        e.sample(kCgroupMemoryRssBytes, l, u.memory_rss_bytes);
        e.sample(kCgroupMemoryCacheBytes, l, u.memory_cache_bytes);
        e.sample(kCgroupMemoryShmemBytes, l, u.memory_shmem_bytes);
        e.sample(kCgroupMemoryFailCount, l, u.memory_fail_count);
        if (const std::int64_t uid = job_uid(s, j); uid >= 0)
            e.sample(kCgroupUid, {{"jobid", j.id}}, static_cast<double>(uid));
    }

    gpu_families(e);
    unsigned devices = 0;
    for (const GpuInfo& g : s.gpus) {
        if (g.lost) continue;
        ++devices;
        if (g.stale) continue;  // no fresh values: a gap, not a repeat
        const JobInfo* j = slurm_job_on_gpu(s, g.index);
        const std::int64_t uid = j ? job_uid(s, *j) : -1;
        const std::string jobid = j ? j->id : std::string();
        const std::string userid = uid >= 0 ? std::to_string(uid) : std::string();
        const Labels l{{"ordinal", std::to_string(g.index)},
                       {"minor_number", std::to_string(g.minor_number.value_or(g.index))},
                       {"uuid", g.uuid},
                       {"name", printable(g.name)},
                       {"jobid", jobid},
                       {"userid", userid}};
        e.sample(kNvidiaGpuMemoryUsedBytes, l, g.memory_used_bytes);
        e.sample(kNvidiaGpuMemoryTotalBytes, l, g.memory_total_bytes);
        e.sample(kNvidiaGpuDutyCycle, l, g.utilization_percent);
        e.sample(kNvidiaGpuPowerUsageMilliwatts, l, g.power_watts, 1000.0);
        e.sample(kNvidiaGpuTemperatureCelsius, l, g.temperature_celsius);
        if (j) {
            // The id as a number: jobstats' other query form is `... and nvidia_gpu_jobId == 1234`.
            e.sample(kNvidiaGpuJobid, l, text::parse_digits<std::uint64_t>(j->id));
            if (uid >= 0) e.sample(kNvidiaGpuJobuid, l, static_cast<double>(uid));
        }
    }
    e.sample(kNvidiaGpuNumDevices, {}, static_cast<double>(devices));
}

}  // namespace baton::formats
