#include "store/snapshot_prometheus.hpp"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

namespace baton {

namespace {

// Samples grouped by metric family, each family printed once with its HELP and TYPE.
class Exposition {
  public:
    using Labels = std::vector<std::pair<const char*, std::string>>;

    void family(const char* name, const char* type, const char* help) {
        if (index_.count(name)) return;
        index_[name] = families_.size();
        families_.push_back({name, type, help, {}});
    }

    void sample(const char* name, const Labels& labels, double v) {
        auto it = index_.find(name);
        if (it == index_.end() || !std::isfinite(v)) return;
        std::string& s = families_[it->second].samples;
        s.append(name);
        if (!labels.empty()) {
            s.push_back('{');
            bool first = true;
            for (const auto& [k, val] : labels) {
                if (!first) s.push_back(',');
                first = false;
                s.append(k).append("=\"");
                for (char c : val) {
                    if (c == '\\')
                        s.append("\\\\");
                    else if (c == '"')
                        s.append("\\\"");
                    else if (c == '\n')
                        s.append("\\n");
                    else
                        s.push_back(c);
                }
                s.push_back('"');
            }
            s.push_back('}');
        }
        s.push_back(' ');
        char buf[40];
        // Integral values print as integers ("900000000", not the shortest form "9e+08").
        char* end = std::fabs(v) < 1e15 && v == std::trunc(v)
                        ? std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v)).ptr
                        : std::to_chars(buf, buf + sizeof buf, v).ptr;
        s.append(buf, end);
        s.push_back('\n');
    }

    template <typename T>
    void sample(const char* name, const Labels& labels, const std::optional<T>& v, double scale = 1.0) {
        if (v) sample(name, labels, static_cast<double>(*v) * scale);
    }

    void write(std::string& out) const {
        for (const auto& f : families_) {
            if (f.samples.empty()) continue;
            out.append("# HELP ").append(f.name).append(" ").append(f.help).append("\n");
            out.append("# TYPE ").append(f.name).append(" ").append(f.type).append("\n");
            out.append(f.samples);
        }
    }

  private:
    struct Family {
        const char* name;
        const char* type;
        const char* help;
        std::string samples;
    };
    std::vector<Family> families_;
    std::map<std::string, std::size_t> index_;
};

void cpu_modes(Exposition& e, const char* name, Exposition::Labels base, const CpuTimes& t) {
    std::pair<const char*, const std::optional<double>*> modes[] = {{"user", &t.user_percent},
                                                                    {"system", &t.system_percent},
                                                                    {"iowait", &t.iowait_percent},
                                                                    {"steal", &t.steal_percent},
                                                                    {"idle", &t.idle_percent}};
    for (auto [mode, v] : modes) {
        auto labels = base;
        labels.emplace_back("mode", mode);
        e.sample(name, labels, *v, 0.01);
    }
}

}  // namespace

void append_snapshot_prometheus(const Snapshot& s, std::string& out) {
    Exposition e;
    const Exposition::Labels none;

    e.family("baton_cpu_cores", "gauge", "Number of online CPU cores.");
    e.sample("baton_cpu_cores", none, s.host.cpu_count);
    e.family("baton_cpu_utilization_ratio", "gauge", "Busy CPU time over the interval (1 - idle - iowait), all cores.");
    e.sample("baton_cpu_utilization_ratio", none, s.cpu.total.utilization_percent, 0.01);
    e.family("baton_cpu_mode_ratio", "gauge", "Share of CPU time per mode over the interval, all cores.");
    cpu_modes(e, "baton_cpu_mode_ratio", none, s.cpu.total);
    e.family("baton_cpu_core_mode_ratio", "gauge", "Share of CPU time per mode over the interval, per core.");
    for (const CpuCore& c : s.cpu.cores)
        cpu_modes(e, "baton_cpu_core_mode_ratio", {{"cpu", std::to_string(c.id)}}, c.times);
    e.family("baton_load_average", "gauge", "Load average over 1, 5 and 15 minutes.");
    const char* periods[] = {"1m", "5m", "15m"};
    for (int i = 0; i < 3; ++i) e.sample("baton_load_average", {{"period", periods[i]}}, s.cpu.load_average[i]);
    e.family("baton_context_switches_per_second", "gauge", "Context switches per second over the interval.");
    e.sample("baton_context_switches_per_second", none, s.cpu.context_switches_per_second);
    e.family("baton_runnable_tasks", "gauge", "Tasks runnable now (procs_running).");
    e.sample("baton_runnable_tasks", none, s.cpu.runnable_tasks);

    e.family("baton_memory_total_bytes", "gauge", "Total usable RAM.");
    e.sample("baton_memory_total_bytes", none, static_cast<double>(s.memory.total_bytes));
    e.family("baton_memory_available_bytes", "gauge", "RAM available for new work without swapping (MemAvailable).");
    e.sample("baton_memory_available_bytes", none, static_cast<double>(s.memory.available_bytes));
    e.family("baton_memory_used_bytes", "gauge", "RAM in use: total - available.");
    e.sample("baton_memory_used_bytes", none, static_cast<double>(s.memory.used_bytes));
    e.family("baton_memory_cached_bytes", "gauge", "Page cache and reclaimable slab.");
    e.sample("baton_memory_cached_bytes", none, static_cast<double>(s.memory.cached_bytes));
    e.family("baton_memory_shared_bytes", "gauge", "Shared memory (Shmem), including /dev/shm and tmpfs.");
    e.sample("baton_memory_shared_bytes", none, static_cast<double>(s.memory.shared_bytes));
    e.family("baton_shm_size_bytes", "gauge", "Size of the /dev/shm filesystem.");
    e.sample("baton_shm_size_bytes", none, s.memory.shm_total_bytes);
    e.family("baton_shm_used_bytes", "gauge", "Bytes used in /dev/shm.");
    e.sample("baton_shm_used_bytes", none, s.memory.shm_used_bytes);

    e.family("baton_swap_total_bytes", "gauge", "Total swap space.");
    e.sample("baton_swap_total_bytes", none, static_cast<double>(s.swap.total_bytes));
    e.family("baton_swap_used_bytes", "gauge", "Swap space in use.");
    e.sample("baton_swap_used_bytes", none, static_cast<double>(s.swap.used_bytes));
    e.family("baton_swap_in_bytes_per_second", "gauge", "Bytes swapped in per second over the interval.");
    e.sample("baton_swap_in_bytes_per_second", none, s.swap.in_bytes_per_second);
    e.family("baton_swap_out_bytes_per_second", "gauge", "Bytes swapped out per second over the interval.");
    e.sample("baton_swap_out_bytes_per_second", none, s.swap.out_bytes_per_second);
    e.family("baton_major_page_faults_per_second", "gauge", "Major page faults per second over the interval.");
    e.sample("baton_major_page_faults_per_second", none, s.swap.major_faults_per_second);
    e.family("baton_oom_kills_total", "counter", "Processes killed by the kernel OOM killer since boot.");
    e.sample("baton_oom_kills_total", none, s.swap.oom_kill_total);

    e.family("baton_pressure_stall_ratio", "gauge", "Pressure stall information: share of time stalled, 10 s average.");
    if (s.pressure.available) {
        std::pair<const char*, const PressureResource*> res[] = {
            {"cpu", &s.pressure.cpu}, {"memory", &s.pressure.memory}, {"io", &s.pressure.io}};
        for (auto [name, r] : res) {
            if (r->some)
                e.sample("baton_pressure_stall_ratio", {{"resource", name}, {"kind", "some"}}, r->some->avg10 / 100);
            if (r->full)
                e.sample("baton_pressure_stall_ratio", {{"resource", name}, {"kind", "full"}}, r->full->avg10 / 100);
        }
    }

    e.family("baton_disk_read_bytes_per_second", "gauge", "Bytes read per second over the interval.");
    e.family("baton_disk_written_bytes_per_second", "gauge", "Bytes written per second over the interval.");
    e.family("baton_disk_reads_per_second", "gauge", "Read operations completed per second.");
    e.family("baton_disk_writes_per_second", "gauge", "Write operations completed per second.");
    e.family("baton_disk_busy_ratio", "gauge", "Share of the interval with I/O in flight.");
    e.family("baton_disk_average_wait_seconds", "gauge", "Average time per completed I/O over the interval.");
    for (const DiskStats& d : s.disks) {
        Exposition::Labels l{{"device", d.name}};
        e.sample("baton_disk_read_bytes_per_second", l, d.read_bytes_per_second);
        e.sample("baton_disk_written_bytes_per_second", l, d.write_bytes_per_second);
        e.sample("baton_disk_reads_per_second", l, d.reads_per_second);
        e.sample("baton_disk_writes_per_second", l, d.writes_per_second);
        e.sample("baton_disk_busy_ratio", l, d.busy_percent, 0.01);
        e.sample("baton_disk_average_wait_seconds", l, d.average_wait_ms, 0.001);
    }

    e.family("baton_network_receive_bytes_per_second", "gauge", "Bytes received per second over the interval.");
    e.family("baton_network_transmit_bytes_per_second", "gauge", "Bytes sent per second over the interval.");
    e.family("baton_network_speed_bytes_per_second", "gauge", "Link speed reported by the driver.");
    for (const NetworkStats& n : s.networks) {
        Exposition::Labels l{{"interface", n.name}};
        e.sample("baton_network_receive_bytes_per_second", l, n.rx_bytes_per_second);
        e.sample("baton_network_transmit_bytes_per_second", l, n.tx_bytes_per_second);
        e.sample("baton_network_speed_bytes_per_second", l, n.speed_mbps, 1e6 / 8);
    }

    e.family("baton_gpu_status_ok", "gauge", "1 when every GPU answered this tick, 0 otherwise.");
    e.sample("baton_gpu_status_ok", none, s.gpu_status == "ok" ? 1.0 : 0.0);
    e.family("baton_gpu_driver_info", "gauge", "NVIDIA driver version; always 1.");
    if (s.gpu_driver_version) e.sample("baton_gpu_driver_info", {{"version", *s.gpu_driver_version}}, 1.0);
    e.family("baton_gpu_info", "gauge", "GPU identity; always 1.");
    e.family("baton_gpu_stale", "gauge", "1 when the GPU values are from an earlier tick (NVML did not answer).");
    e.family("baton_gpu_lost", "gauge", "1 when NVML reports the GPU lost (fallen off the bus); it gives no values.");
    e.family("baton_gpu_utilization_ratio", "gauge", "Share of time a kernel ran on the GPU.");
    e.family("baton_gpu_memory_utilization_ratio", "gauge", "Share of time device memory was read or written.");
    e.family("baton_gpu_memory_total_bytes", "gauge", "GPU memory size.");
    e.family("baton_gpu_memory_used_bytes", "gauge", "GPU memory in use.");
    e.family("baton_gpu_memory_free_bytes", "gauge", "GPU memory free.");
    e.family("baton_gpu_memory_reserved_bytes", "gauge", "GPU memory reserved by the driver.");
    e.family("baton_gpu_temperature_celsius", "gauge", "GPU core temperature.");
    e.family("baton_gpu_power_watts", "gauge", "GPU power draw.");
    e.family("baton_gpu_power_limit_watts", "gauge", "Enforced GPU power limit.");
    e.family("baton_gpu_sm_clock_hertz", "gauge", "Current SM clock.");
    e.family("baton_gpu_sm_clock_max_hertz", "gauge", "Maximum SM clock.");
    e.family("baton_gpu_memory_clock_hertz", "gauge", "Current memory clock.");
    e.family("baton_gpu_memory_clock_max_hertz", "gauge", "Maximum memory clock.");
    e.family("baton_gpu_throttle_reason", "gauge", "1 for each active clock-event (throttle) reason.");
    e.family("baton_gpu_pcie_link_generation", "gauge", "Current PCIe link generation.");
    e.family("baton_gpu_pcie_link_generation_max", "gauge", "Maximum PCIe link generation.");
    e.family("baton_gpu_pcie_link_width", "gauge", "Current PCIe link width (lanes).");
    e.family("baton_gpu_pcie_link_width_max", "gauge", "Maximum PCIe link width (lanes).");
    e.family("baton_gpu_pcie_receive_bytes_per_second", "gauge", "PCIe bytes received by the GPU per second.");
    e.family("baton_gpu_pcie_transmit_bytes_per_second", "gauge", "PCIe bytes sent by the GPU per second.");
    e.family("baton_gpu_ecc_uncorrected_volatile_errors", "gauge", "Uncorrected ECC errors since the driver loaded.");
    e.family("baton_gpu_persistence_mode", "gauge", "1 when persistence mode is on.");
    e.family("baton_gpu_mig_mode", "gauge", "1 when MIG mode is on.");
    e.family("baton_gpu_sm_activity_ratio", "gauge", "SM activity from GPM (Hopper and newer).");
    e.family("baton_gpu_tensor_activity_ratio", "gauge", "Tensor-core activity from GPM (Hopper and newer).");
    e.family("baton_gpu_process_memory_bytes", "gauge", "GPU memory used by one process on one GPU.");
    e.family("baton_gpu_process_sm_utilization_ratio", "gauge", "SM utilisation of one process on one GPU.");
    for (const GpuInfo& g : s.gpus) {
        Exposition::Labels l{{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}};
        e.sample("baton_gpu_info",
                 {{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}, {"name", g.name}, {"pci_bus_id", g.pci_bus_id}},
                 1.0);
        e.sample("baton_gpu_stale", l, g.stale ? 1.0 : 0.0);
        e.sample("baton_gpu_lost", l, g.lost ? 1.0 : 0.0);
        e.sample("baton_gpu_utilization_ratio", l, g.utilization_percent, 0.01);
        e.sample("baton_gpu_memory_utilization_ratio", l, g.memory_utilization_percent, 0.01);
        e.sample("baton_gpu_memory_total_bytes", l, g.memory_total_bytes);
        e.sample("baton_gpu_memory_used_bytes", l, g.memory_used_bytes);
        e.sample("baton_gpu_memory_free_bytes", l, g.memory_free_bytes);
        e.sample("baton_gpu_memory_reserved_bytes", l, g.memory_reserved_bytes);
        e.sample("baton_gpu_temperature_celsius", l, g.temperature_celsius);
        e.sample("baton_gpu_power_watts", l, g.power_watts);
        e.sample("baton_gpu_power_limit_watts", l, g.power_limit_watts);
        e.sample("baton_gpu_sm_clock_hertz", l, g.sm_clock_mhz, 1e6);
        e.sample("baton_gpu_sm_clock_max_hertz", l, g.sm_clock_max_mhz, 1e6);
        e.sample("baton_gpu_memory_clock_hertz", l, g.memory_clock_mhz, 1e6);
        e.sample("baton_gpu_memory_clock_max_hertz", l, g.memory_clock_max_mhz, 1e6);
        if (g.throttle_reasons)
            for (const auto& r : *g.throttle_reasons) {
                auto lr = l;
                lr.emplace_back("reason", r);
                e.sample("baton_gpu_throttle_reason", lr, 1.0);
            }
        e.sample("baton_gpu_pcie_link_generation", l, g.pcie_generation);
        e.sample("baton_gpu_pcie_link_generation_max", l, g.pcie_generation_max);
        e.sample("baton_gpu_pcie_link_width", l, g.pcie_width);
        e.sample("baton_gpu_pcie_link_width_max", l, g.pcie_width_max);
        e.sample("baton_gpu_pcie_receive_bytes_per_second", l, g.pcie_rx_bytes_per_second);
        e.sample("baton_gpu_pcie_transmit_bytes_per_second", l, g.pcie_tx_bytes_per_second);
        e.sample("baton_gpu_ecc_uncorrected_volatile_errors", l, g.ecc_uncorrected_volatile);
        if (g.persistence_mode) e.sample("baton_gpu_persistence_mode", l, *g.persistence_mode ? 1.0 : 0.0);
        if (g.mig_mode) e.sample("baton_gpu_mig_mode", l, *g.mig_mode ? 1.0 : 0.0);
        e.sample("baton_gpu_sm_activity_ratio", l, g.sm_activity_percent, 0.01);
        e.sample("baton_gpu_tensor_activity_ratio", l, g.tensor_activity_percent, 0.01);
        for (const GpuProcess& p : g.processes) {
            auto lp = l;
            lp.emplace_back("pid", std::to_string(p.pid));
            lp.emplace_back("type", p.type);
            e.sample("baton_gpu_process_memory_bytes", lp, p.used_memory_bytes);
            e.sample("baton_gpu_process_sm_utilization_ratio", lp, p.sm_utilization_percent, 0.01);
        }
    }

    e.family("baton_process_cpu_ratio", "gauge",
             "CPU time of one process over the interval, in cores (1 = one full core).");
    e.family("baton_process_resident_memory_bytes", "gauge", "Resident set size of one process.");
    e.family("baton_process_gpu_memory_bytes", "gauge", "GPU memory of one process, summed over GPUs.");
    for (const ProcessInfo& p : s.processes) {
        Exposition::Labels l{{"pid", std::to_string(p.pid)}, {"user", p.user}, {"name", p.name}};
        e.sample("baton_process_cpu_ratio", l, p.cpu_percent, 0.01);
        e.sample("baton_process_resident_memory_bytes", l, static_cast<double>(p.rss_bytes));
        e.sample("baton_process_gpu_memory_bytes", l, p.gpu_memory_bytes);
    }
    e.write(out);
}

}  // namespace baton
