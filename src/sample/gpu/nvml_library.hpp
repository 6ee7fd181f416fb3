// NvmlLibrary: libnvidia-ml loaded with dlopen and the entry points baton uses, each
// resolved by name. A symbol the driver lacks stays null, and the field it feeds is absent.
// Where NVML versioned a call (_v2, _v3) the newest one present is chosen.
#pragma once

#include <cstddef>
#include <string>

#include "core/result.hpp"
#include "sample/gpu/nvml_api.hpp"

namespace baton {

struct NvmlLibrary {
    void* handle = nullptr;
    // Which symbols were found, e.g. "nvmlDeviceGetComputeRunningProcesses_v3"; for messages.
    std::string process_symbol;

    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    const char* (*error_string)(nvmlReturn_t) = nullptr;
    nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
    nvmlReturn_t (*nvml_version)(char*, unsigned) = nullptr;
    nvmlReturn_t (*cuda_driver_version)(int*) = nullptr;  // _v2 when present
    nvmlReturn_t (*device_count)(unsigned*) = nullptr;
    nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
    nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
    nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
    nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
    nvmlReturn_t (*memory_v2)(nvmlDevice_t, nvmlMemory_v2_t*) = nullptr;
    nvmlReturn_t (*memory_v1)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
    nvmlReturn_t (*temperature)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
    nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*clock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
    nvmlReturn_t (*max_clock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
    nvmlReturn_t (*clock_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
    nvmlReturn_t (*pcie_gen)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*pcie_gen_max)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*pcie_width_max)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*pcie_throughput)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
    nvmlReturn_t (*ecc_total)(nvmlDevice_t, unsigned, unsigned, unsigned long long*) = nullptr;
    nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;  // millijoules since the driver loaded
    nvmlReturn_t (*pcie_replays)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*persistence)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*minor_number)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*compute_mode)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
    // What baton top's GPU panel shows: fans, video engines, NVLink traffic, memory health, MIG.
    nvmlReturn_t (*fan_speed)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*encoder_utilization)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
    nvmlReturn_t (*decoder_utilization)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
    nvmlReturn_t (*field_values)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
    nvmlReturn_t (*retired_pages)(nvmlDevice_t, unsigned, unsigned*, unsigned long long*) = nullptr;
    nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
    nvmlReturn_t (*max_mig_devices)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*mig_device_by_index)(nvmlDevice_t, unsigned, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*gpu_instance_id)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*compute_instance_id)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*compute_processes)(nvmlDevice_t, unsigned*, void*) = nullptr;
    nvmlReturn_t (*graphics_processes)(nvmlDevice_t, unsigned*, void*) = nullptr;
    std::size_t process_stride = 0;  // 16 (v1) or 24 (_v2/_v3; 32 probed, see process_records.hpp)
    nvmlReturn_t (*process_utilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned*,
                                        unsigned long long) = nullptr;
    nvmlReturn_t (*gpm_query_support)(nvmlDevice_t, nvmlGpmSupport_t*) = nullptr;
    nvmlReturn_t (*gpm_sample_alloc)(nvmlGpmSample_t*) = nullptr;
    nvmlReturn_t (*gpm_sample_free)(nvmlGpmSample_t) = nullptr;
    nvmlReturn_t (*gpm_sample_get)(nvmlDevice_t, nvmlGpmSample_t) = nullptr;
    nvmlReturn_t (*gpm_metrics_get)(nvmlGpmMetricsGet_t*) = nullptr;
    // The topology between GPUs (bench allreduce prints it, like nvidia-smi topo -m).
    nvmlReturn_t (*topology_common_ancestor)(nvmlDevice_t, nvmlDevice_t, int*) = nullptr;
    nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
    nvmlReturn_t (*nvlink_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;  // _v2

    // XID events (a thread of their own waits on them: nvml_backend.cpp).
    nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
    nvmlReturn_t (*event_set_free)(nvmlEventSet_t) = nullptr;
    nvmlReturn_t (*supported_event_types)(nvmlDevice_t, unsigned long long*) = nullptr;
    nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
    nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;  // _v2 when present

    // An error string for a return code, from the library when it has one.
    std::string describe(nvmlReturn_t rc) const;
};

// dlopens `path` and resolves the symbols. Fails when the library cannot be loaded or lacks
// the entry points without which nothing can be read (init, count, handle by index).
Result<NvmlLibrary> load_nvml_library(const std::string& path);

}  // namespace baton
