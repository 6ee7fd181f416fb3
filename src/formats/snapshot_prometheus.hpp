// The Prometheus text exposition (format 0.0.4) view of a Snapshot, following Prometheus'
// naming conventions and node_exporter's habits: cumulative quantities are counters in base
// units ending in _total (so rate() works), levels are gauges (bytes, seconds, hertz, ratios
// 0..1), 0/1 gauges for states so series do not vanish while their subject exists, and
// per-process series bounded. Every family is listed in docs/metrics.md. Absent values produce
// no sample. Checked by `promtool check metrics` in the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sample/linux/job_cgroup_usage.hpp"
#include "sample/snapshot.hpp"
#include "formats/prometheus_text.hpp"

namespace baton::formats {

struct PrometheusOptions {
    // Processes with series of their own (CPU time, resident memory): the top N by CPU. Processes
    // holding GPU memory always have their GPU series. [serve] process_series.
    std::size_t process_series = 20;
    // Also the dcgm-exporter default fields (DCGM_FI_*) in its units and labels, so dashboards
    // built for dcgm-exporter work unchanged (docs/metrics.md has the mapping).
    bool dcgm_compat = false;
    // The host label of the DCGM_FI_* series (Hostname, hostname): dcgm-exporter takes NODE_NAME in
    // Kubernetes (the node, not the pod); empty: the snapshot's hostname.
    std::string dcgm_hostname;
    // Also the families Princeton's jobstats queries (cgroup_* per Slurm job, nvidia_gpu_* with
    // jobid), as its cgroup and GPU exporters name them: docs/metrics.md, "jobstats compatibility".
    bool jobstats_compat = false;
};

void append_snapshot_prometheus(const Snapshot& snap, const PrometheusOptions& options, Exposition& e);

// One scrape's worth with the default options (baton snapshot --prometheus).
void append_snapshot_prometheus(const Snapshot& snap, const PrometheusOptions& options, std::string& out);

// The job series (formats/job_prometheus.cpp): baton_job_info and the allocations per job,
// baton_gpu_job_info per GPU and job, baton_process_job_info for `pids` (those with series).
void append_job_series(const Snapshot& snap, const std::vector<std::uint32_t>& pids, Exposition& e);

// The one job that uses or was allocated GPU `gpu`; null for none or several.
const JobInfo* only_job_on_gpu(const Snapshot& snap, unsigned gpu);

// The dcgm-exporter compatible families (called by append_snapshot_prometheus with dcgm_compat).
void append_dcgm_compat(const Snapshot& snap, const PrometheusOptions& options, Exposition& e);

// The jobstats-compatible families (formats/jobstats_prometheus.cpp): each Slurm job's cgroup
// totals from `cgroups` (by job id, read at scrape time by the caller) and the GPUs with the job on each.
void append_jobstats_compat(const Snapshot& snap, const std::map<std::string, os::JobCgroupUsage>& cgroups,
                            Exposition& e);

}  // namespace baton::formats
