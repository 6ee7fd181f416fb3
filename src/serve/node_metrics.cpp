#include "serve/node_metrics.hpp"

#include <array>

namespace baton::serve {

namespace {

constexpr std::array<std::string_view, 21> kMetrics = {
    "cpu.utilization_percent",
    "cpu.iowait_percent",
    "cpu.core_utilization_percent",
    "memory.used_bytes",
    "memory.total_bytes",
    "memory.shm_used_bytes",
    "swap.used_bytes",
    "swap.in_bytes_per_second",
    "swap.out_bytes_per_second",
    "disk.read_bytes_per_second",
    "disk.write_bytes_per_second",
    "disk.busy_percent",
    "network.rx_bytes_per_second",
    "network.tx_bytes_per_second",
    "gpu.utilization_percent",
    "gpu.sm_activity_percent",
    "gpu.tensor_activity_percent",
    "gpu.memory_used_bytes",
    "gpu.memory_used_percent",
    "gpu.power_watts",
    "gpu.temperature_celsius",
};

}  // namespace

bool known_metric(std::string_view metric) {
    for (std::string_view m : kMetrics)
        if (m == metric) return true;
    return false;
}

void for_each_metric(const Snapshot& s, bool per_core,
                     const std::function<void(std::string_view, const std::string&, double)>& emit) {
    const std::string host = "host";
    auto opt = [&](std::string_view metric, const std::string& subject, const auto& v) {
        if (v) emit(metric, subject, static_cast<double>(*v));
    };
    opt("cpu.utilization_percent", host, s.cpu.total.utilization_percent);
    opt("cpu.iowait_percent", host, s.cpu.total.iowait_percent);
    if (per_core)
        for (const CpuCore& c : s.cpu.cores)
            opt("cpu.core_utilization_percent", "cpu:" + std::to_string(c.id), c.times.utilization_percent);
    emit("memory.used_bytes", host, static_cast<double>(s.memory.used_bytes));
    emit("memory.total_bytes", host, static_cast<double>(s.memory.total_bytes));
    opt("memory.shm_used_bytes", host, s.memory.shm_used_bytes);
    emit("swap.used_bytes", host, static_cast<double>(s.swap.used_bytes));
    opt("swap.in_bytes_per_second", host, s.swap.in_bytes_per_second);
    opt("swap.out_bytes_per_second", host, s.swap.out_bytes_per_second);
    for (const DiskStats& d : s.disks) {
        const std::string subject = "disk:" + d.name;
        opt("disk.read_bytes_per_second", subject, d.read_bytes_per_second);
        opt("disk.write_bytes_per_second", subject, d.write_bytes_per_second);
        opt("disk.busy_percent", subject, d.busy_percent);
    }
    for (const NetworkStats& n : s.networks) {
        const std::string subject = "net:" + n.name;
        opt("network.rx_bytes_per_second", subject, n.rx_bytes_per_second);
        opt("network.tx_bytes_per_second", subject, n.tx_bytes_per_second);
    }
    for (const GpuInfo& g : s.gpus) {
        if (g.stale || g.lost) continue;  // no fresh values: a gap, not a repeat
        const std::string subject = "gpu:" + std::to_string(g.index);
        opt("gpu.utilization_percent", subject, g.utilization_percent);
        opt("gpu.sm_activity_percent", subject, g.sm_activity_percent);
        opt("gpu.tensor_activity_percent", subject, g.tensor_activity_percent);
        opt("gpu.memory_used_bytes", subject, g.memory_used_bytes);
        if (g.memory_used_bytes && g.memory_total_bytes && *g.memory_total_bytes > 0)
            emit("gpu.memory_used_percent", subject,
                 100.0 * static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*g.memory_total_bytes));
        opt("gpu.power_watts", subject, g.power_watts);
        opt("gpu.temperature_celsius", subject, g.temperature_celsius);
    }
}

}  // namespace baton::serve
