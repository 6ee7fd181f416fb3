#include "store/snapshot_prometheus.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/printable.hpp"
#include "sample/gpu/throttle_reasons.hpp"
#include "sample/process_lookup.hpp"

namespace baton {

namespace {

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
    e.family("baton_cpu_cores", "gauge", "Online CPU cores.");
    e.sample("baton_cpu_cores", none, s.host.cpu_count);
    e.family("baton_cpu_seconds_total", "counter", "CPU time spent in each mode since boot, per core.");
    for (const CpuCore& c : s.cpu.cores) {
        if (!c.seconds_total) continue;
        const CpuSeconds& t = *c.seconds_total;
        const std::string cpu = std::to_string(c.id);
        const std::pair<const char*, double> modes[] = {
            {"user", t.user},     {"nice", t.nice}, {"system", t.system},   {"idle", t.idle},
            {"iowait", t.iowait}, {"irq", t.irq},   {"softirq", t.softirq}, {"steal", t.steal}};
        for (const auto& [mode, v] : modes) e.sample("baton_cpu_seconds_total", {{"cpu", cpu}, {"mode", mode}}, v);
    }
    e.family("baton_cpu_utilization_ratio", "gauge",
             "Busy share of all cores (1 - idle - iowait) over baton's last sampling interval.");
    e.sample("baton_cpu_utilization_ratio", none, s.cpu.total.utilization_percent, 0.01);
    e.family("baton_load1", "gauge", "1-minute load average.");
    e.sample("baton_load1", none, s.cpu.load_average[0]);
    e.family("baton_load5", "gauge", "5-minute load average.");
    e.sample("baton_load5", none, s.cpu.load_average[1]);
    e.family("baton_load15", "gauge", "15-minute load average.");
    e.sample("baton_load15", none, s.cpu.load_average[2]);
    e.family("baton_context_switches_total", "counter", "Context switches since boot.");
    e.sample("baton_context_switches_total", none, s.cpu.context_switches_total);
    e.family("baton_procs_running", "gauge", "Tasks runnable now.");
    e.sample("baton_procs_running", none, s.cpu.runnable_tasks);
    e.family("baton_procs_blocked", "gauge", "Tasks blocked on I/O now.");
    e.sample("baton_procs_blocked", none, s.cpu.blocked_tasks);

    const std::pair<const char*, std::uint64_t> memory[] = {{"baton_memory_total_bytes", s.memory.total_bytes},
                                                            {"baton_memory_available_bytes", s.memory.available_bytes},
                                                            {"baton_memory_used_bytes", s.memory.used_bytes},
                                                            {"baton_memory_free_bytes", s.memory.free_bytes},
                                                            {"baton_memory_cached_bytes", s.memory.cached_bytes},
                                                            {"baton_memory_buffers_bytes", s.memory.buffers_bytes},
                                                            {"baton_memory_shared_bytes", s.memory.shared_bytes}};
    const char* memory_help[] = {"Total usable RAM.",
                                 "RAM available for new work without swapping (MemAvailable).",
                                 "RAM in use: total - available.",
                                 "Untouched RAM (MemFree).",
                                 "Page cache and reclaimable slab.",
                                 "Block device buffers.",
                                 "Shared memory (Shmem): tmpfs and /dev/shm."};
    for (std::size_t i = 0; i < std::size(memory); ++i) {
        e.family(memory[i].first, "gauge", memory_help[i]);
        e.sample(memory[i].first, none, static_cast<double>(memory[i].second));
    }
    e.family("baton_shm_size_bytes", "gauge", "Size of the /dev/shm filesystem.");
    e.sample("baton_shm_size_bytes", none, s.memory.shm_total_bytes);
    e.family("baton_shm_used_bytes", "gauge", "Bytes used in /dev/shm.");
    e.sample("baton_shm_used_bytes", none, s.memory.shm_used_bytes);

    e.family("baton_swap_total_bytes", "gauge", "Swap space.");
    e.sample("baton_swap_total_bytes", none, static_cast<double>(s.swap.total_bytes));
    e.family("baton_swap_used_bytes", "gauge", "Swap space in use.");
    e.sample("baton_swap_used_bytes", none, static_cast<double>(s.swap.used_bytes));
    e.family("baton_swap_in_bytes_total", "counter", "Bytes swapped in since boot.");
    e.sample("baton_swap_in_bytes_total", none, s.swap.in_bytes_total);
    e.family("baton_swap_out_bytes_total", "counter", "Bytes swapped out since boot.");
    e.sample("baton_swap_out_bytes_total", none, s.swap.out_bytes_total);
    e.family("baton_major_page_faults_total", "counter", "Major page faults since boot.");
    e.sample("baton_major_page_faults_total", none, s.swap.major_faults_total);
    e.family("baton_oom_kills_total", "counter", "Processes killed by the kernel OOM killer since boot.");
    e.sample("baton_oom_kills_total", none, s.swap.oom_kill_total);

    e.family("baton_pressure_stalled_seconds_total", "counter",
             "Pressure stall information: time some (or all, kind=full) tasks stalled on the resource.");
    if (s.pressure.available) {
        const std::pair<const char*, const PressureResource*> res[] = {
            {"cpu", &s.pressure.cpu}, {"memory", &s.pressure.memory}, {"io", &s.pressure.io}};
        for (const auto& [name, r] : res) {
            if (r->some)
                e.sample("baton_pressure_stalled_seconds_total", {{"resource", name}, {"kind", "some"}},
                         static_cast<double>(r->some->total_us) / 1e6);
            if (r->full)
                e.sample("baton_pressure_stalled_seconds_total", {{"resource", name}, {"kind", "full"}},
                         static_cast<double>(r->full->total_us) / 1e6);
        }
    }

    e.family("baton_disk_read_bytes_total", "counter", "Bytes read from the disk.");
    e.family("baton_disk_written_bytes_total", "counter", "Bytes written to the disk.");
    e.family("baton_disk_reads_completed_total", "counter", "Reads completed.");
    e.family("baton_disk_writes_completed_total", "counter", "Writes completed.");
    e.family("baton_disk_io_time_seconds_total", "counter", "Time the disk had I/O in flight.");
    for (const DiskStats& d : s.disks) {
        const Labels l{{"device", d.name}};
        e.sample("baton_disk_read_bytes_total", l, static_cast<double>(d.read_bytes_total));
        e.sample("baton_disk_written_bytes_total", l, static_cast<double>(d.written_bytes_total));
        e.sample("baton_disk_reads_completed_total", l, static_cast<double>(d.reads_total));
        e.sample("baton_disk_writes_completed_total", l, static_cast<double>(d.writes_total));
        e.sample("baton_disk_io_time_seconds_total", l, d.io_time_seconds_total);
    }

    e.family("baton_network_receive_bytes_total", "counter", "Bytes received on the interface.");
    e.family("baton_network_transmit_bytes_total", "counter", "Bytes sent on the interface.");
    e.family("baton_network_speed_bytes", "gauge", "Link speed reported by the driver, bytes per second.");
    for (const NetworkStats& n : s.networks) {
        const Labels l{{"device", n.name}};
        e.sample("baton_network_receive_bytes_total", l, static_cast<double>(n.rx_bytes_total));
        e.sample("baton_network_transmit_bytes_total", l, static_cast<double>(n.tx_bytes_total));
        e.sample("baton_network_speed_bytes", l, n.speed_mbps, 1e6 / 8);
    }
}

void gpu_metrics(const Snapshot& s, Exposition& e) {
    const Labels none;
    e.family("baton_gpu_status_ok", "gauge", "1 when every GPU answered this tick, 0 otherwise.");
    e.sample("baton_gpu_status_ok", none, s.gpu_status == "ok" ? 1.0 : 0.0);
    e.family("baton_gpu_driver_info", "gauge", "NVIDIA driver version; always 1.");
    if (s.gpu_driver_version) e.sample("baton_gpu_driver_info", {{"version", *s.gpu_driver_version}}, 1.0);
    e.family("baton_gpu_info", "gauge", "GPU identity; always 1.");
    e.family("baton_gpu_stale", "gauge", "1 when the GPU values are from an earlier tick (NVML did not answer).");
    e.family("baton_gpu_lost", "gauge", "1 when NVML reports the GPU lost (fallen off the bus); it gives no values.");
    e.family("baton_gpu_utilization_ratio", "gauge", "Share of time a kernel ran on the GPU.");
    e.family("baton_gpu_memory_utilization_ratio", "gauge", "Share of time device memory was read or written.");
    e.family("baton_gpu_sm_activity_ratio", "gauge", "SM activity from GPM (Hopper and newer).");
    e.family("baton_gpu_tensor_activity_ratio", "gauge", "Tensor-core activity from GPM (Hopper and newer).");
    e.family("baton_gpu_memory_total_bytes", "gauge", "GPU memory size.");
    e.family("baton_gpu_memory_used_bytes", "gauge", "GPU memory in use.");
    e.family("baton_gpu_memory_free_bytes", "gauge", "GPU memory free.");
    e.family("baton_gpu_memory_reserved_bytes", "gauge", "GPU memory reserved by the driver.");
    e.family("baton_gpu_temperature_celsius", "gauge", "GPU core temperature.");
    e.family("baton_gpu_power_watts", "gauge", "GPU power draw.");
    e.family("baton_gpu_power_limit_watts", "gauge", "Enforced GPU power limit.");
    e.family("baton_gpu_energy_joules_total", "counter", "Energy the GPU used since the driver loaded.");
    e.family("baton_gpu_sm_clock_hertz", "gauge", "Current SM clock.");
    e.family("baton_gpu_sm_clock_max_hertz", "gauge", "Maximum SM clock.");
    e.family("baton_gpu_memory_clock_hertz", "gauge", "Current memory clock.");
    e.family("baton_gpu_memory_clock_max_hertz", "gauge", "Maximum memory clock.");
    e.family("baton_gpu_throttle_active", "gauge",
             "1 while a clock-event (throttle) reason holds, 0 otherwise; every known reason has a series.");
    e.family("baton_gpu_pcie_link_generation", "gauge", "Current PCIe link generation.");
    e.family("baton_gpu_pcie_link_generation_max", "gauge", "Maximum PCIe link generation.");
    e.family("baton_gpu_pcie_link_width", "gauge", "Current PCIe link width (lanes).");
    e.family("baton_gpu_pcie_link_width_max", "gauge", "Maximum PCIe link width (lanes).");
    e.family("baton_gpu_pcie_receive_bytes_per_second", "gauge", "PCIe bytes received by the GPU per second (NVML).");
    e.family("baton_gpu_pcie_transmit_bytes_per_second", "gauge", "PCIe bytes sent by the GPU per second (NVML).");
    e.family("baton_gpu_pcie_replays_total", "counter", "PCIe transfers the GPU had to replay (link errors).");
    e.family("baton_gpu_ecc_uncorrected_errors_total", "counter",
             "Uncorrected ECC errors since the driver loaded (volatile count).");
    e.family("baton_gpu_ecc_corrected_errors_total", "counter",
             "Corrected ECC errors since the driver loaded (volatile count).");
    e.family("baton_gpu_retired_pages", "gauge", "Memory pages retired for ECC errors (GPUs before Ampere).");
    e.family("baton_gpu_remapped_rows", "gauge",
             "Memory rows remapped for ECC errors (Ampere and newer), by the kind of error that caused it.");
    e.family("baton_gpu_remapping_pending", "gauge", "1 when a row remapping waits for a GPU reset.");
    e.family("baton_gpu_remapping_failed", "gauge", "1 when a row remapping failed: the GPU needs service.");
    e.family("baton_gpu_fan_speed_ratio", "gauge", "Intended fan speed, share of its maximum (absent without a fan).");
    e.family("baton_gpu_encoder_utilization_ratio", "gauge", "Video encoder (NVENC) utilisation.");
    e.family("baton_gpu_decoder_utilization_ratio", "gauge", "Video decoder (NVDEC) utilisation.");
    e.family("baton_gpu_nvlink_links_active", "gauge", "NVLinks up (absent on a GPU without NVLink).");
    e.family("baton_gpu_nvlink_receive_bytes_per_second", "gauge", "NVLink data received, over all links.");
    e.family("baton_gpu_nvlink_transmit_bytes_per_second", "gauge", "NVLink data sent, over all links.");
    e.family("baton_gpu_persistence_mode", "gauge", "1 when persistence mode is on.");
    e.family("baton_gpu_mig_mode", "gauge", "1 when MIG mode is on.");
    e.family("baton_gpu_mig_instance_info", "gauge", "One series per MIG device of a GPU in MIG mode, value 1.");
    e.family("baton_gpu_mig_instance_memory_total_bytes", "gauge", "Memory of one MIG device.");
    e.family("baton_gpu_mig_instance_memory_used_bytes", "gauge", "Memory in use on one MIG device.");
    e.family("baton_gpu_mig_instance_processes", "gauge", "Compute processes on one MIG device.");
    const std::vector<std::string_view> reasons = known_throttle_reasons();
    for (const GpuInfo& g : s.gpus) {
        const std::string index = std::to_string(g.index);
        const Labels l{{"gpu", index}, {"uuid", g.uuid}};
        e.sample("baton_gpu_info", {{"gpu", index}, {"uuid", g.uuid}, {"name", g.name}, {"pci_bus_id", g.pci_bus_id}},
                 1.0);
        e.sample("baton_gpu_stale", l, g.stale ? 1.0 : 0.0);
        e.sample("baton_gpu_lost", l, g.lost ? 1.0 : 0.0);
        e.sample("baton_gpu_utilization_ratio", l, g.utilization_percent, 0.01);
        e.sample("baton_gpu_memory_utilization_ratio", l, g.memory_utilization_percent, 0.01);
        e.sample("baton_gpu_sm_activity_ratio", l, g.sm_activity_percent, 0.01);
        e.sample("baton_gpu_tensor_activity_ratio", l, g.tensor_activity_percent, 0.01);
        e.sample("baton_gpu_memory_total_bytes", l, g.memory_total_bytes);
        e.sample("baton_gpu_memory_used_bytes", l, g.memory_used_bytes);
        e.sample("baton_gpu_memory_free_bytes", l, g.memory_free_bytes);
        e.sample("baton_gpu_memory_reserved_bytes", l, g.memory_reserved_bytes);
        e.sample("baton_gpu_temperature_celsius", l, g.temperature_celsius);
        e.sample("baton_gpu_power_watts", l, g.power_watts);
        e.sample("baton_gpu_power_limit_watts", l, g.power_limit_watts);
        e.sample("baton_gpu_energy_joules_total", l, g.energy_joules_total);
        e.sample("baton_gpu_sm_clock_hertz", l, g.sm_clock_mhz, 1e6);
        e.sample("baton_gpu_sm_clock_max_hertz", l, g.sm_clock_max_mhz, 1e6);
        e.sample("baton_gpu_memory_clock_hertz", l, g.memory_clock_mhz, 1e6);
        e.sample("baton_gpu_memory_clock_max_hertz", l, g.memory_clock_max_mhz, 1e6);
        if (g.throttle_reasons) {
            // Every known reason, 0 or 1, so an alert on one never sees its series vanish; an
            // unknown bit (a newer driver) gets a series while it holds.
            for (std::string_view r : reasons) {
                const bool on =
                    std::find(g.throttle_reasons->begin(), g.throttle_reasons->end(), r) != g.throttle_reasons->end();
                e.sample("baton_gpu_throttle_active", {{"gpu", index}, {"uuid", g.uuid}, {"reason", std::string(r)}},
                         on ? 1.0 : 0.0);
            }
            for (const std::string& r : *g.throttle_reasons)
                if (std::find(reasons.begin(), reasons.end(), r) == reasons.end())
                    e.sample("baton_gpu_throttle_active", {{"gpu", index}, {"uuid", g.uuid}, {"reason", r}}, 1.0);
        }
        e.sample("baton_gpu_pcie_link_generation", l, g.pcie_generation);
        e.sample("baton_gpu_pcie_link_generation_max", l, g.pcie_generation_max);
        e.sample("baton_gpu_pcie_link_width", l, g.pcie_width);
        e.sample("baton_gpu_pcie_link_width_max", l, g.pcie_width_max);
        e.sample("baton_gpu_pcie_receive_bytes_per_second", l, g.pcie_rx_bytes_per_second);
        e.sample("baton_gpu_pcie_transmit_bytes_per_second", l, g.pcie_tx_bytes_per_second);
        e.sample("baton_gpu_pcie_replays_total", l, g.pcie_replay_total);
        e.sample("baton_gpu_ecc_uncorrected_errors_total", l, g.ecc_uncorrected_volatile);
        e.sample("baton_gpu_ecc_corrected_errors_total", l, g.ecc_corrected_volatile);
        e.sample("baton_gpu_retired_pages", l, g.retired_pages);
        e.sample("baton_gpu_remapped_rows", {{"gpu", index}, {"uuid", g.uuid}, {"cause", "corrected"}},
                 g.remapped_rows_corrected);
        e.sample("baton_gpu_remapped_rows", {{"gpu", index}, {"uuid", g.uuid}, {"cause", "uncorrected"}},
                 g.remapped_rows_uncorrected);
        if (g.remapping_pending) e.sample("baton_gpu_remapping_pending", l, *g.remapping_pending ? 1.0 : 0.0);
        if (g.remapping_failed) e.sample("baton_gpu_remapping_failed", l, *g.remapping_failed ? 1.0 : 0.0);
        e.sample("baton_gpu_fan_speed_ratio", l, g.fan_speed_percent, 0.01);
        e.sample("baton_gpu_encoder_utilization_ratio", l, g.encoder_utilization_percent, 0.01);
        e.sample("baton_gpu_decoder_utilization_ratio", l, g.decoder_utilization_percent, 0.01);
        e.sample("baton_gpu_nvlink_links_active", l, g.nvlink_links_active);
        e.sample("baton_gpu_nvlink_receive_bytes_per_second", l, g.nvlink_rx_bytes_per_second);
        e.sample("baton_gpu_nvlink_transmit_bytes_per_second", l, g.nvlink_tx_bytes_per_second);
        if (g.persistence_mode) e.sample("baton_gpu_persistence_mode", l, *g.persistence_mode ? 1.0 : 0.0);
        if (g.mig_mode) e.sample("baton_gpu_mig_mode", l, *g.mig_mode ? 1.0 : 0.0);
        for (const MigInstance& m : g.mig_instances) {
            const Labels ml{{"gpu", index},
                            {"uuid", g.uuid},
                            {"gpu_instance", std::to_string(m.gpu_instance_id)},
                            {"compute_instance", std::to_string(m.compute_instance_id)}};
            Labels info = ml;
            info.push_back({"mig_uuid", m.uuid});
            info.push_back({"name", m.name});
            e.sample("baton_gpu_mig_instance_info", info, 1.0);
            e.sample("baton_gpu_mig_instance_memory_total_bytes", ml, m.memory_total_bytes);
            e.sample("baton_gpu_mig_instance_memory_used_bytes", ml, m.memory_used_bytes);
            e.sample("baton_gpu_mig_instance_processes", ml, static_cast<double>(m.pids.size()));
        }
    }
}

void process_metrics(const Snapshot& s, const PrometheusOptions& o, Exposition& e) {
    e.family("baton_gpu_process_memory_bytes", "gauge", "GPU memory held by one process on one GPU.");
    e.family("baton_gpu_process_sm_utilization_ratio", "gauge", "SM utilisation of one process on one GPU.");
    for (const GpuInfo& g : s.gpus)
        for (const GpuProcess& p : g.processes) {
            const ProcessInfo* info = find_process(s, p.our_pid());
            const Labels l{{"gpu", std::to_string(g.index)},
                           {"uuid", g.uuid},
                           {"pid", std::to_string(p.pid)},
                           {"user", info ? printable(info->user) : std::string()},
                           {"command", info ? command_label(*info) : std::string()},
                           {"type", p.type}};
            e.sample("baton_gpu_process_memory_bytes", l, p.used_memory_bytes);
            e.sample("baton_gpu_process_sm_utilization_ratio", l, p.sm_utilization_percent, 0.01);
        }

    e.family("baton_processes", "gauge", "Processes on the machine.");
    if (!s.processes_collected) return;
    e.sample("baton_processes", {}, static_cast<double>(s.processes.size()));
    e.family("baton_process_cpu_seconds_total", "counter",
             "CPU time (user + system) of one of the processes busiest on the CPU ([serve] process_series).");
    e.family("baton_process_cpu_ratio", "gauge", "CPU of one of those processes over the last interval, in cores.");
    e.family("baton_process_resident_memory_bytes", "gauge", "Resident set size of one of those processes.");
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
    for (std::size_t i = 0; i < n; ++i) {
        const ProcessInfo& p = *top[i];
        const Labels l{{"pid", std::to_string(p.pid)}, {"user", printable(p.user)}, {"command", command_label(p)}};
        e.sample("baton_process_cpu_seconds_total", l, p.cpu_seconds_total);
        e.sample("baton_process_cpu_ratio", l, p.cpu_percent, 0.01);
        e.sample("baton_process_resident_memory_bytes", l, static_cast<double>(p.rss_bytes));
    }
}

}  // namespace

void append_snapshot_prometheus(const Snapshot& s, const PrometheusOptions& o, Exposition& e) {
    host_metrics(s, e);
    gpu_metrics(s, e);
    process_metrics(s, o, e);
    if (o.dcgm_compat) append_dcgm_compat(s, e);
}

void append_snapshot_prometheus(const Snapshot& s, const PrometheusOptions& o, std::string& out) {
    Exposition e;
    append_snapshot_prometheus(s, o, e);
    e.write(out);
}

}  // namespace baton
