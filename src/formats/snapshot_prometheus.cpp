#include "formats/snapshot_prometheus.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/printable.hpp"
#include "sample/gpu/throttle_reasons.hpp"
#include "sample/process_lookup.hpp"
#include "formats/snapshot_fields.hpp"

namespace baton::formats {

namespace {

// The families this file writes, each declared once: a sample can only name one of these.
constexpr MetricFamily kBatonCpuSecondsTotal{"baton_cpu_seconds_total", "counter",
                                             "CPU time spent in each mode since boot, per core."};
constexpr MetricFamily kBatonLoad1{"baton_load1", "gauge", "1-minute load average."};
constexpr MetricFamily kBatonLoad5{"baton_load5", "gauge", "5-minute load average."};
constexpr MetricFamily kBatonLoad15{"baton_load15", "gauge", "15-minute load average."};
constexpr MetricFamily kBatonPressureStalledSecondsTotal{
    "baton_pressure_stalled_seconds_total", "counter",
    "Pressure stall information: time some (or all, kind=full) tasks stalled on the resource."};
constexpr MetricFamily kNodeFilesystemDeviceError{
    "node_filesystem_device_error", "gauge",
    "Whether an error occurred while getting statistics for the given device."};
constexpr MetricFamily kBatonFilesystemJobWriters{"baton_filesystem_job_writers", "gauge",
                                                  "Processes of a job writing to the filesystem (cwd or open files)."};
constexpr MetricFamily kBatonGpuStatusOk{"baton_gpu_status_ok", "gauge",
                                         "1 when every GPU answered this tick, 0 otherwise."};
constexpr MetricFamily kBatonGpuDriverInfo{"baton_gpu_driver_info", "gauge", "NVIDIA driver version; always 1."};
constexpr MetricFamily kBatonGpuInfo{"baton_gpu_info", "gauge", "GPU identity; always 1."};
constexpr MetricFamily kBatonGpuLost{"baton_gpu_lost", "gauge",
                                     "1 when NVML reports the GPU lost (fallen off the bus); it gives no values."};
constexpr MetricFamily kBatonGpuThrottleActive{
    "baton_gpu_throttle_active", "gauge",
    "1 while a clock-event (throttle) reason holds, 0 otherwise; every known reason has a series."};
constexpr MetricFamily kBatonGpuMigInstanceInfo{"baton_gpu_mig_instance_info", "gauge",
                                                "One series per MIG device of a GPU in MIG mode, value 1."};
constexpr MetricFamily kBatonGpuMigInstanceMemoryTotalBytes{"baton_gpu_mig_instance_memory_total_bytes", "gauge",
                                                            "Memory of one MIG device."};
constexpr MetricFamily kBatonGpuMigInstanceMemoryUsedBytes{"baton_gpu_mig_instance_memory_used_bytes", "gauge",
                                                           "Memory in use on one MIG device."};
constexpr MetricFamily kBatonGpuMigInstanceProcesses{"baton_gpu_mig_instance_processes", "gauge",
                                                     "Compute processes on one MIG device."};
constexpr MetricFamily kBatonGpuXidEventsTotal{
    "baton_gpu_xid_events_total", "counter",
    "XIDs the NVIDIA driver reported for the GPU since baton began watching; absent when not watched."};
constexpr MetricFamily kBatonGpuXidErrorsTotal{"baton_gpu_xid_errors_total", "counter",
                                               "XIDs of one kind (the xid label) reported for the GPU."};
constexpr MetricFamily kBatonProcesses{"baton_processes", "gauge", "Processes on the machine."};
constexpr MetricFamily kBatonProcessCpuSecondsTotal{
    "baton_process_cpu_seconds_total", "counter",
    "CPU time (user + system) of one of the processes busiest on the CPU ([serve] process_series)."};
constexpr MetricFamily kBatonProcessCpuRatio{"baton_process_cpu_ratio", "gauge",
                                             "CPU of one of those processes over the last interval, in cores."};
constexpr MetricFamily kBatonProcessResidentMemoryBytes{"baton_process_resident_memory_bytes", "gauge",
                                                        "Resident set size of one of those processes."};

using Labels = Exposition::Labels;

// A command line as a label: printable and at most this many bytes (cut on a character
// boundary), so one long command line cannot bloat every scrape.
constexpr std::size_t kCommandLabelBytes = 120;

std::string command_label(const ProcessInfo& p) {
    std::string c = printable(p.command.empty() ? p.name : p.command);
    if (c.size() <= kCommandLabelBytes) return c;
    std::size_t end = 0;
    for (std::size_t i = 0; i < c.size();) {
        const std::size_t n = std::max<std::size_t>(1, utf8_sequence_length(c, i));
        if (i + n > kCommandLabelBytes) break;
        i += n;
        end = i;
    }
    c.resize(end);
    return c;
}

void host_metrics(const Snapshot& s, Exposition& e) {
    const Labels none;
    declare_families(e, host_fields());
    sample_fields(e, host_fields(), s.host, none);
    e.family(kBatonCpuSecondsTotal);
    for (const CpuCore& c : s.cpu.cores) {
        if (!c.seconds_total) continue;
        const CpuSeconds& t = *c.seconds_total;
        const std::string cpu = std::to_string(c.id);
        const std::pair<const char*, double> modes[] = {
            {"user", t.user},     {"nice", t.nice}, {"system", t.system},   {"idle", t.idle},
            {"iowait", t.iowait}, {"irq", t.irq},   {"softirq", t.softirq}, {"steal", t.steal}};
        for (const auto& [mode, v] : modes) e.sample(kBatonCpuSecondsTotal, {{"cpu", cpu}, {"mode", mode}}, v);
    }
    declare_families(e, cpu_time_fields());
    sample_fields(e, cpu_time_fields(), s.cpu.total, none);
    e.family(kBatonLoad1);
    e.sample(kBatonLoad1, none, s.cpu.load_average[0]);
    e.family(kBatonLoad5);
    e.sample(kBatonLoad5, none, s.cpu.load_average[1]);
    e.family(kBatonLoad15);
    e.sample(kBatonLoad15, none, s.cpu.load_average[2]);
    declare_families(e, cpu_fields());
    sample_fields(e, cpu_fields(), s.cpu, none);

    declare_families(e, memory_fields());
    sample_fields(e, memory_fields(), s.memory, none);
    declare_families(e, swap_fields());
    sample_fields(e, swap_fields(), s.swap, none);

    e.family(kBatonPressureStalledSecondsTotal);
    if (s.pressure.available) {
        const std::pair<const char*, const PressureResource*> res[] = {
            {"cpu", &s.pressure.cpu}, {"memory", &s.pressure.memory}, {"io", &s.pressure.io}};
        for (const auto& [name, r] : res) {
            if (r->some)
                e.sample(kBatonPressureStalledSecondsTotal, {{"resource", name}, {"kind", "some"}},
                         static_cast<double>(r->some->total_us) / 1e6);
            if (r->full)
                e.sample(kBatonPressureStalledSecondsTotal, {{"resource", name}, {"kind", "full"}},
                         static_cast<double>(r->full->total_us) / 1e6);
        }
    }

    declare_families(e, disk_fields());
    for (const DiskStats& d : s.disks) sample_fields(e, disk_fields(), d, {{"device", d.name}});
    // (node_exporter's families: snapshot_fields.cpp)
    declare_families(e, filesystem_fields());
    e.family(kNodeFilesystemDeviceError);
    e.family(kBatonFilesystemJobWriters);
    for (const FilesystemStats& f : s.filesystems) {
        const Labels l{{"device", f.device}, {"fstype", f.fstype}, {"mountpoint", f.mount_point}};
        e.sample(kNodeFilesystemDeviceError, l, f.error ? 1.0 : 0.0);
        if (f.error) {  // a reading that failed has no values, and an older growth rate is not said either
            FilesystemStats failed;
            failed.readonly = f.readonly;
            sample_fields(e, filesystem_fields(), failed, l);
            continue;
        }
        sample_fields(e, filesystem_fields(), f, l);
        e.sample(kBatonFilesystemJobWriters, l, static_cast<double>(f.writer_pids.size()));
    }

    declare_families(e, network_fields());
    for (const NetworkStats& n : s.networks) sample_fields(e, network_fields(), n, {{"device", n.name}});
}

void gpu_metrics(const Snapshot& s, Exposition& e) {
    const Labels none;
    e.family(kBatonGpuStatusOk);
    e.sample(kBatonGpuStatusOk, none, s.gpu_state == GpuState::ok ? 1.0 : 0.0);
    e.family(kBatonGpuDriverInfo);
    if (s.gpu_driver_version) e.sample(kBatonGpuDriverInfo, {{"version", *s.gpu_driver_version}}, 1.0);
    e.family(kBatonGpuInfo);
    e.family(kBatonGpuLost);
    declare_families(e, gpu_fields());
    e.family(kBatonGpuThrottleActive);
    e.family(kBatonGpuMigInstanceInfo);
    e.family(kBatonGpuMigInstanceMemoryTotalBytes);
    e.family(kBatonGpuMigInstanceMemoryUsedBytes);
    e.family(kBatonGpuMigInstanceProcesses);
    e.family(kBatonGpuXidEventsTotal);
    e.family(kBatonGpuXidErrorsTotal);
    const std::vector<std::string_view> reasons = known_throttle_reasons();
    for (const GpuInfo& g : s.gpus) {
        const std::string index = std::to_string(g.index);
        const Labels l{{"gpu", index}, {"uuid", g.uuid}};
        e.sample(kBatonGpuInfo, {{"gpu", index}, {"uuid", g.uuid}, {"name", g.name}, {"pci_bus_id", g.pci_bus_id}},
                 1.0);
        e.sample(kBatonGpuLost, l, g.lost ? 1.0 : 0.0);
        sample_fields(e, gpu_fields(), g, l);
        if (g.throttle_reasons) {
            // Every known reason, 0 or 1, so an alert on one never sees its series vanish; an
            // unknown bit (a newer driver) gets a series while it holds.
            for (std::string_view r : reasons) {
                const bool on =
                    std::find(g.throttle_reasons->begin(), g.throttle_reasons->end(), r) != g.throttle_reasons->end();
                e.sample(kBatonGpuThrottleActive, {{"gpu", index}, {"uuid", g.uuid}, {"reason", std::string(r)}},
                         on ? 1.0 : 0.0);
            }
            for (const std::string& r : *g.throttle_reasons)
                if (std::find(reasons.begin(), reasons.end(), r) == reasons.end())
                    e.sample(kBatonGpuThrottleActive, {{"gpu", index}, {"uuid", g.uuid}, {"reason", r}}, 1.0);
        }
        if (g.xid_errors) {
            // The total from 0 while watched, so increase() sees the first XID; one series per XID seen.
            std::uint64_t total = 0;
            for (const XidCount& x : *g.xid_errors) {
                total += x.count;
                e.sample(kBatonGpuXidErrorsTotal, {{"gpu", index}, {"uuid", g.uuid}, {"xid", std::to_string(x.xid)}},
                         static_cast<double>(x.count));
            }
            e.sample(kBatonGpuXidEventsTotal, l, static_cast<double>(total));
        }
        for (const MigInstance& m : g.mig_instances) {
            const Labels ml{{"gpu", index},
                            {"uuid", g.uuid},
                            {"gpu_instance", std::to_string(m.gpu_instance_id)},
                            {"compute_instance", std::to_string(m.compute_instance_id)}};
            Labels info = ml;
            info.push_back({"mig_uuid", m.uuid});
            info.push_back({"name", m.name});
            e.sample(kBatonGpuMigInstanceInfo, info, 1.0);
            e.sample(kBatonGpuMigInstanceMemoryTotalBytes, ml, m.memory_total_bytes);
            e.sample(kBatonGpuMigInstanceMemoryUsedBytes, ml, m.memory_used_bytes);
            e.sample(kBatonGpuMigInstanceProcesses, ml, static_cast<double>(m.pids.size()));
        }
    }
}

void process_metrics(const Snapshot& s, const PrometheusOptions& o, Exposition& e) {
    declare_families(e, gpu_process_fields());
    for (const GpuInfo& g : s.gpus)
        for (const GpuProcess& p : g.processes) {
            const ProcessInfo* info = find_process(s, p.our_pid());
            const Labels l{{"gpu", std::to_string(g.index)},
                           {"uuid", g.uuid},
                           {"pid", std::to_string(p.pid)},
                           {"user", info ? printable(info->user) : std::string()},
                           {"command", info ? command_label(*info) : std::string()},
                           {"type", enum_name(p.type)}};
            sample_fields(e, gpu_process_fields(), p, l);
        }

    e.family(kBatonProcesses);
    if (!s.processes_collected) return;
    e.sample(kBatonProcesses, {}, static_cast<double>(s.processes.size()));
    e.family(kBatonProcessCpuSecondsTotal);
    e.family(kBatonProcessCpuRatio);
    e.family(kBatonProcessResidentMemoryBytes);
    // The top N by CPU over the last interval (then by CPU time), so a box with 5,000 processes
    // exposes N series, not 5,000.
    std::vector<const ProcessInfo*> top;
    top.reserve(s.processes.size());
    for (const ProcessInfo& p : s.processes) top.push_back(&p);
    const std::size_t n = std::min(o.process_series, top.size());
    std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(n), top.end(),
                      [](const ProcessInfo* a, const ProcessInfo* b) {
                          const double ca = a->cpu_percent.value_or(0), cb = b->cpu_percent.value_or(0);
                          if (ca != cb) return ca > cb;
                          if (a->cpu_seconds_total != b->cpu_seconds_total)
                              return a->cpu_seconds_total > b->cpu_seconds_total;
                          return a->pid < b->pid;
                      });
    // The processes with series of their own (the top N and those on a GPU) also say their job.
    std::vector<std::uint32_t> with_series;
    for (std::size_t i = 0; i < n; ++i) {
        const ProcessInfo& p = *top[i];
        const Labels l{{"pid", std::to_string(p.pid)}, {"user", printable(p.user)}, {"command", command_label(p)}};
        e.sample(kBatonProcessCpuSecondsTotal, l, p.cpu_seconds_total);
        e.sample(kBatonProcessCpuRatio, l, p.cpu_percent, 0.01);
        e.sample(kBatonProcessResidentMemoryBytes, l, static_cast<double>(p.rss_bytes));
        with_series.push_back(p.pid);
    }
    for (const GpuInfo& g : s.gpus)
        for (const GpuProcess& p : g.processes) with_series.push_back(p.our_pid());
    std::sort(with_series.begin(), with_series.end());
    with_series.erase(std::unique(with_series.begin(), with_series.end()), with_series.end());
    append_job_series(s, with_series, e);
}

}  // namespace

void append_snapshot_prometheus(const Snapshot& s, const PrometheusOptions& o, Exposition& e) {
    host_metrics(s, e);
    gpu_metrics(s, e);
    process_metrics(s, o, e);
    if (o.dcgm_compat) append_dcgm_compat(s, o, e);
}

void append_snapshot_prometheus(const Snapshot& s, const PrometheusOptions& o, std::string& out) {
    Exposition e;
    append_snapshot_prometheus(s, o, e);
    e.write(out);
}

}  // namespace baton::formats
