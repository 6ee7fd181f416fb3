#include "sample/gpu/nvml_library.hpp"

#include <dlfcn.h>

#include "core/shared_library.hpp"

namespace baton {

std::string NvmlLibrary::describe(nvmlReturn_t rc) const {
    if (error_string) {
        if (const char* s = error_string(rc)) return s;
    }
    return "NVML error " + std::to_string(rc);
}

namespace {

// (the entry points below are many: a short name for the one resolver)
template <typename Fn>
bool resolve(void* handle, Fn& into, std::initializer_list<const char*> names, std::string* which = nullptr) {
    return resolve_symbol(handle, into, names, which);
}

}  // namespace

Result<NvmlLibrary> load_nvml_library(const std::string& path) {
    Result<void*> opened = open_shared_library(path);
    if (!opened.ok()) return make_error(ErrorCode::not_found, "no NVIDIA driver: " + opened.error().message);
    void* h = *opened;
    NvmlLibrary L;
    L.handle = h;
    bool core = resolve(h, L.init, {"nvmlInit_v2", "nvmlInit"}) &&
                resolve(h, L.device_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}) &&
                resolve(h, L.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
    if (!core) {
        dlclose(h);
        return make_error("the NVML library " + path + " lacks nvmlInit/nvmlDeviceGetCount: not a usable NVML");
    }
    resolve(h, L.shutdown, {"nvmlShutdown"});
    resolve(h, L.error_string, {"nvmlErrorString"});
    resolve(h, L.driver_version, {"nvmlSystemGetDriverVersion"});
    resolve(h, L.nvml_version, {"nvmlSystemGetNVMLVersion"});
    resolve(h, L.cuda_driver_version, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
    resolve(h, L.uuid, {"nvmlDeviceGetUUID"});
    resolve(h, L.name, {"nvmlDeviceGetName"});
    resolve(h, L.pci_info, {"nvmlDeviceGetPciInfo_v3"});
    resolve(h, L.utilization, {"nvmlDeviceGetUtilizationRates"});
    resolve(h, L.memory_v2, {"nvmlDeviceGetMemoryInfo_v2"});
    resolve(h, L.memory_v1, {"nvmlDeviceGetMemoryInfo"});
    resolve(h, L.temperature, {"nvmlDeviceGetTemperature"});
    resolve(h, L.power_usage, {"nvmlDeviceGetPowerUsage"});
    resolve(h, L.power_limit, {"nvmlDeviceGetEnforcedPowerLimit"});
    resolve(h, L.clock, {"nvmlDeviceGetClockInfo"});
    resolve(h, L.max_clock, {"nvmlDeviceGetMaxClockInfo"});
    resolve(h, L.clock_reasons,
            {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
    resolve(h, L.pcie_gen, {"nvmlDeviceGetCurrPcieLinkGeneration"});
    resolve(h, L.pcie_gen_max, {"nvmlDeviceGetMaxPcieLinkGeneration"});
    resolve(h, L.pcie_width, {"nvmlDeviceGetCurrPcieLinkWidth"});
    resolve(h, L.pcie_width_max, {"nvmlDeviceGetMaxPcieLinkWidth"});
    resolve(h, L.pcie_throughput, {"nvmlDeviceGetPcieThroughput"});
    resolve(h, L.ecc_total, {"nvmlDeviceGetTotalEccErrors"});
    resolve(h, L.energy, {"nvmlDeviceGetTotalEnergyConsumption"});
    resolve(h, L.pcie_replays, {"nvmlDeviceGetPcieReplayCounter"});
    resolve(h, L.persistence, {"nvmlDeviceGetPersistenceMode"});
    resolve(h, L.minor_number, {"nvmlDeviceGetMinorNumber"});
    resolve(h, L.compute_mode, {"nvmlDeviceGetComputeMode"});
    resolve(h, L.mig_mode, {"nvmlDeviceGetMigMode"});
    resolve(h, L.fan_speed, {"nvmlDeviceGetFanSpeed"});
    resolve(h, L.encoder_utilization, {"nvmlDeviceGetEncoderUtilization"});
    resolve(h, L.decoder_utilization, {"nvmlDeviceGetDecoderUtilization"});
    resolve(h, L.field_values, {"nvmlDeviceGetFieldValues"});
    resolve(h, L.retired_pages, {"nvmlDeviceGetRetiredPages"});
    resolve(h, L.remapped_rows, {"nvmlDeviceGetRemappedRows"});
    resolve(h, L.max_mig_devices, {"nvmlDeviceGetMaxMigDeviceCount"});
    resolve(h, L.mig_device_by_index, {"nvmlDeviceGetMigDeviceHandleByIndex"});
    resolve(h, L.gpu_instance_id, {"nvmlDeviceGetGpuInstanceId"});
    resolve(h, L.compute_instance_id, {"nvmlDeviceGetComputeInstanceId"});
    // Process lists: _v3 and _v2 take 24-byte records (R535's 32-byte _v3 is probed at decode
    // time), the unversioned symbol 16-byte ones.
    if (resolve(h, L.compute_processes,
                {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
                &L.process_symbol)) {
        L.process_stride = 24;
        resolve(h, L.graphics_processes,
                {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"});
    } else if (resolve(h, L.compute_processes, {"nvmlDeviceGetComputeRunningProcesses"}, &L.process_symbol)) {
        L.process_stride = 16;
        resolve(h, L.graphics_processes, {"nvmlDeviceGetGraphicsRunningProcesses"});
    }
    resolve(h, L.process_utilization, {"nvmlDeviceGetProcessUtilization"});
    resolve(h, L.gpm_query_support, {"nvmlGpmQueryDeviceSupport"});
    resolve(h, L.gpm_sample_alloc, {"nvmlGpmSampleAlloc"});
    resolve(h, L.gpm_sample_free, {"nvmlGpmSampleFree"});
    resolve(h, L.gpm_sample_get, {"nvmlGpmSampleGet"});
    resolve(h, L.gpm_metrics_get, {"nvmlGpmMetricsGet"});
    resolve(h, L.topology_common_ancestor, {"nvmlDeviceGetTopologyCommonAncestor"});
    resolve(h, L.nvlink_state, {"nvmlDeviceGetNvLinkState"});
    resolve(h, L.nvlink_remote_pci, {"nvmlDeviceGetNvLinkRemotePciInfo_v2"});
    resolve(h, L.event_set_create, {"nvmlEventSetCreate"});
    resolve(h, L.event_set_free, {"nvmlEventSetFree"});
    resolve(h, L.supported_event_types, {"nvmlDeviceGetSupportedEventTypes"});
    resolve(h, L.register_events, {"nvmlDeviceRegisterEvents"});
    resolve(h, L.event_set_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
    return L;
}

}  // namespace baton
