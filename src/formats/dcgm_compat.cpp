// dcgm-exporter's default fields from baton's own readings, in dcgm-exporter's units (percent,
// MiB, W, MHz, mJ) and labels (gpu, UUID, device, modelName, Hostname and hostname, pci_bus_id,
// DCGM_FI_DRIVER_VERSION), so a Grafana dashboard built for dcgm-exporter (NVIDIA's among them)
// works unchanged against baton serve --dcgm-compat. The mapping is the `dcgm` column of
// formats/snapshot_fields.cpp, documented in docs/metrics.md.
#include <cstdlib>

#include "formats/snapshot_fields.hpp"
#include "formats/snapshot_prometheus.hpp"

namespace baton::formats {

namespace {

// The families this file writes, each declared once: a sample can only name one of these.
constexpr MetricFamily kDcgmFiDevXidErrors{"DCGM_FI_DEV_XID_ERRORS", "gauge",
                                           "Value of the last XID error encountered."};

// "NVIDIA H100 80GB HBM3 MIG 3g.40gb" -> "3g.40gb", dcgm-exporter's GPU_I_PROFILE.
std::string mig_profile(const std::string& name) {
    const std::size_t at = name.rfind("MIG ");
    return at == std::string::npos ? std::string() : name.substr(at + 4);
}

}  // namespace

void append_dcgm_compat(const Snapshot& s, const PrometheusOptions& o, Exposition& e) {
    declare_families(e, gpu_fields(), /*dcgm=*/true);
    e.family(kDcgmFiDevXidErrors);
    const std::string& host = o.dcgm_hostname.empty() ? s.host.hostname : o.dcgm_hostname;
    for (const GpuInfo& g : s.gpus) {
        const std::string device = "nvidia" + std::to_string(g.minor_number.value_or(g.index));
        // Hostname and hostname both: dcgm-exporter renamed the label, and dashboards use either.
        Exposition::Labels l{{"gpu", std::to_string(g.index)},
                             {"UUID", g.uuid},
                             {"device", device},
                             {"modelName", g.name},
                             {"Hostname", host},
                             {"hostname", host},
                             {"pci_bus_id", g.pci_bus_id}};
        if (s.gpu_driver_version) l.push_back({"DCGM_FI_DRIVER_VERSION", *s.gpu_driver_version});
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
            e.sample(kDcgmFiDevXidErrors, l, newest ? static_cast<double>(newest->xid) : 0.0);
        }
        // A MIG device's memory, as dcgm-exporter writes it: the GPU's labels with the instance's
        // GPU_I_PROFILE and GPU_I_ID.
        for (const MigInstance& m : g.mig_instances) {
            Exposition::Labels ml = l;
            ml.push_back({"GPU_I_PROFILE", mig_profile(m.name)});
            ml.push_back({"GPU_I_ID", std::to_string(m.gpu_instance_id)});
            constexpr double kBytesPerMiB = 1048576.0;
            if (m.memory_used_bytes)
                e.sample(kDcgmFbUsed, ml, static_cast<double>(*m.memory_used_bytes) / kBytesPerMiB);
            if (m.memory_used_bytes && m.memory_total_bytes && *m.memory_total_bytes >= *m.memory_used_bytes)
                e.sample(kDcgmFbFree, ml,
                         static_cast<double>(*m.memory_total_bytes - *m.memory_used_bytes) / kBytesPerMiB);
        }
    }
}

}  // namespace baton::formats
