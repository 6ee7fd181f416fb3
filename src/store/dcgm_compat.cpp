// dcgm-exporter's default fields from baton's own readings, in dcgm-exporter's units (percent,
// MiB, W, MHz, mJ) and labels (gpu, UUID, device, modelName, Hostname, pci_bus_id), so a Grafana
// dashboard built for dcgm-exporter (NVIDIA's among them) works unchanged against baton serve
// --dcgm-compat. The mapping is the `dcgm` column of store/snapshot_fields.cpp, documented in
// docs/metrics.md.
#include "store/snapshot_fields.hpp"
#include "store/snapshot_prometheus.hpp"

namespace baton::store {

void append_dcgm_compat(const Snapshot& s, Exposition& e) {
    declare_families(e, gpu_fields(), /*dcgm=*/true);
    for (const GpuInfo& g : s.gpus) {
        const std::string device = "nvidia" + std::to_string(g.minor_number.value_or(g.index));
        const Exposition::Labels l{{"gpu", std::to_string(g.index)},
                                   {"UUID", g.uuid},
                                   {"device", device},
                                   {"modelName", g.name},
                                   {"Hostname", s.host.hostname},
                                   {"pci_bus_id", g.pci_bus_id}};
        sample_fields(e, gpu_fields(), g, l, /*dcgm=*/true);
    }
}

}  // namespace baton::store
