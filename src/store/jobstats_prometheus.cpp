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
#include "store/snapshot_prometheus.hpp"

namespace baton::store {

namespace {

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
    e.family("cgroup_cpu_total_seconds", "gauge", "Cumulative CPU total seconds for jobid");
    e.family("cgroup_cpu_user_seconds", "gauge", "Cumulative CPU user seconds for jobid");
    e.family("cgroup_cpu_system_seconds", "gauge", "Cumulative CPU system seconds for jobid");
    e.family("cgroup_cpus", "gauge", "Number of CPUs in the jobid");
    e.family("cgroup_memory_total_bytes", "gauge", "Memory total given to jobid in bytes");
    e.family("cgroup_memory_used_bytes", "gauge", "Memory used in bytes");
    e.family("cgroup_memory_rss_bytes", "gauge", "Memory RSS used in bytes");
    e.family("cgroup_memory_cache_bytes", "gauge", "Memory cache used in bytes");
    e.family("cgroup_memory_shmem_bytes", "gauge", "Memory shmem used in bytes");
    e.family("cgroup_memory_fail_count", "gauge", "Memory fail count");
    e.family("cgroup_uid", "gauge", "Uid number of user running this job");
}

void gpu_families(Exposition& e) {
    e.family("nvidia_gpu_num_devices", "gauge", "Number of GPU devices");
    e.family("nvidia_gpu_memory_used_bytes", "gauge", "Memory used by the GPU device in bytes");
    e.family("nvidia_gpu_memory_total_bytes", "gauge", "Total memory of the GPU device in bytes");
    e.family("nvidia_gpu_duty_cycle", "gauge",
             "Percent of time over the past sample period during which one or more kernels were executing on the "
             "GPU device");
    e.family("nvidia_gpu_power_usage_milliwatts", "gauge", "Power usage of the GPU device in milliwatts");
    e.family("nvidia_gpu_temperature_celsius", "gauge", "Temperature of the GPU device in celsius");
    e.family("nvidia_gpu_jobId", "gauge", "JobId number of a job currently using this GPU as reported by Slurm");
    e.family("nvidia_gpu_jobUid", "gauge", "UID number of user running jobs on this GPU");
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
        e.sample("cgroup_cpu_total_seconds", l, u.cpu_seconds);
        e.sample("cgroup_cpu_user_seconds", l, u.cpu_user_seconds);
        e.sample("cgroup_cpu_system_seconds", l, u.cpu_system_seconds);
        // A job whose cgroup has no cpuset of its own (ConstrainCores=no) has the cores Slurm gave it.
        e.sample("cgroup_cpus", l, u.cpus ? u.cpus : j.allocated_cpus);
        // No limit in the cgroup (ConstrainRAMSpace=no): what Slurm allocated, else the machine's,
        // never v1's 8 EiB "unlimited", which would make every job look empty.
        std::optional<std::uint64_t> total = u.memory_limit_bytes;
        if (!total) total = j.allocated_memory_bytes;
        if (!total && s.memory.total_bytes > 0) total = s.memory.total_bytes;
        e.sample("cgroup_memory_total_bytes", l, total);
        e.sample("cgroup_memory_used_bytes", l, u.memory_used_bytes);
        e.sample("cgroup_memory_rss_bytes", l, u.memory_rss_bytes);
        e.sample("cgroup_memory_cache_bytes", l, u.memory_cache_bytes);
        e.sample("cgroup_memory_shmem_bytes", l, u.memory_shmem_bytes);
        e.sample("cgroup_memory_fail_count", l, u.memory_fail_count);
        if (const std::int64_t uid = job_uid(s, j); uid >= 0)
            e.sample("cgroup_uid", {{"jobid", j.id}}, static_cast<double>(uid));
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
        e.sample("nvidia_gpu_memory_used_bytes", l, g.memory_used_bytes);
        e.sample("nvidia_gpu_memory_total_bytes", l, g.memory_total_bytes);
        e.sample("nvidia_gpu_duty_cycle", l, g.utilization_percent);
        e.sample("nvidia_gpu_power_usage_milliwatts", l, g.power_watts, 1000.0);
        e.sample("nvidia_gpu_temperature_celsius", l, g.temperature_celsius);
        if (j) {
            // The id as a number: jobstats' other query form is `... and nvidia_gpu_jobId == 1234`.
            e.sample("nvidia_gpu_jobId", l, text::parse_digits<std::uint64_t>(j->id));
            if (uid >= 0) e.sample("nvidia_gpu_jobUid", l, static_cast<double>(uid));
        }
    }
    e.sample("nvidia_gpu_num_devices", {}, static_cast<double>(devices));
}

}  // namespace baton::store
