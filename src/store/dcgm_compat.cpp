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
    e.family("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.");
    for (const GpuInfo& g : s.gpus) {
        const std::string device = "nvidia" + std::to_string(g.minor_number.value_or(g.index));
        Exposition::Labels l{{"gpu", std::to_string(g.index)},
                             {"UUID", g.uuid},
                             {"device", device},
                             {"modelName", g.name},
                             {"Hostname", s.host.hostname},
                             {"pci_bus_id", g.pci_bus_id}};
        // dcgm-exporter's Kubernetes and HPC job mapping labels, when one job holds the GPU.
        if (const JobInfo* j = only_job_on_gpu(s, g.index)) {
            if (j->kind == JobKind::slurm) l.push_back({"hpc_job", j->id});
            if (j->kind == JobKind::pod && !j->name.empty()) {
                l.push_back({"pod", j->name});
                l.push_back({"namespace", j->pod_namespace});
                if (!j->container.empty()) l.push_back({"container", j->container});
            }
        }
        sample_fields(e, gpu_fields(), g, l, /*dcgm=*/true);
        if (g.xid_errors) {
            // As DCGM: the newest XID's number, 0 before any came.
            const XidCount* newest = nullptr;
            for (const XidCount& x : *g.xid_errors)
                if (!newest || x.last_unix_ms >= newest->last_unix_ms) newest = &x;
            e.sample("DCGM_FI_DEV_XID_ERRORS", l, newest ? static_cast<double>(newest->xid) : 0.0);
        }
    }
}

}  // namespace baton::store
