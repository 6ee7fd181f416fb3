// dcgm-exporter's default fields from baton's own readings, in dcgm-exporter's units (percent,
// MiB, W, MHz, mJ) and labels (gpu, UUID, device, modelName, Hostname, pci_bus_id), so a Grafana
// dashboard built for dcgm-exporter (NVIDIA's among them) works unchanged against baton serve
// --dcgm-compat. The mapping is the table in docs/metrics.md.
#include "store/snapshot_prometheus.hpp"

namespace baton {

void append_dcgm_compat(const Snapshot& s, Exposition& e) {
    e.family("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).");
    e.family("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).");
    e.family("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).");
    e.family("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).");
    e.family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).");
    e.family("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.");
    e.family("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).");
    e.family("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).");
    e.family("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).");
    e.family("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).");
    e.family("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).");
    e.family("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.");
    e.family("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.");
    e.family("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.");
    e.family("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.");
    constexpr double kMiB = 1.0 / (1024.0 * 1024.0);
    for (const GpuInfo& g : s.gpus) {
        const std::string device = "nvidia" + std::to_string(g.minor_number.value_or(g.index));
        const Exposition::Labels l{{"gpu", std::to_string(g.index)},
                                   {"UUID", g.uuid},
                                   {"device", device},
                                   {"modelName", g.name},
                                   {"Hostname", s.host.hostname},
                                   {"pci_bus_id", g.pci_bus_id}};
        e.sample("DCGM_FI_DEV_SM_CLOCK", l, g.sm_clock_mhz);
        e.sample("DCGM_FI_DEV_MEM_CLOCK", l, g.memory_clock_mhz);
        e.sample("DCGM_FI_DEV_GPU_TEMP", l, g.temperature_celsius);
        e.sample("DCGM_FI_DEV_POWER_USAGE", l, g.power_watts);
        e.sample("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", l, g.energy_joules_total, 1000.0);
        e.sample("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", l, g.pcie_replay_total);
        e.sample("DCGM_FI_DEV_GPU_UTIL", l, g.utilization_percent);
        e.sample("DCGM_FI_DEV_MEM_COPY_UTIL", l, g.memory_utilization_percent);
        e.sample("DCGM_FI_DEV_FB_FREE", l, g.memory_free_bytes, kMiB);
        e.sample("DCGM_FI_DEV_FB_USED", l, g.memory_used_bytes, kMiB);
        e.sample("DCGM_FI_DEV_FB_RESERVED", l, g.memory_reserved_bytes, kMiB);
        e.sample("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", l, g.ecc_uncorrected_volatile);
        e.sample("DCGM_FI_PROF_GR_ENGINE_ACTIVE", l, g.utilization_percent, 0.01);
        e.sample("DCGM_FI_PROF_SM_ACTIVE", l, g.sm_activity_percent, 0.01);
        e.sample("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", l, g.tensor_activity_percent, 0.01);
    }
}

}  // namespace baton
