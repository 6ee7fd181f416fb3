#include "sample/snapshot.hpp"

namespace baton {

GpuState gpu_state_from_status(const std::string& status) {
    // The lines baton wrote before it wrote the state beside them (sample/gpu/nvml_backend.cpp).
    auto starts = [&](const char* prefix) { return status.rfind(prefix, 0) == 0; };
    if (status == "ok") return GpuState::ok;
    if (status.empty() || status == "the agent has not read the GPUs yet") return GpuState::not_read;
    if (starts("no NVIDIA driver")) return GpuState::no_driver;
    if (status == "no NVIDIA GPU found") return GpuState::no_gpus;
    if (status == "GPU sampling disabled") return GpuState::disabled;
    if (starts("NVML call ") && status.find("GPU values are stale") != std::string::npos) return GpuState::stale;
    if (starts("NVML initialisation failed") || starts("NVML cannot count devices") || starts("the NVML library "))
        return GpuState::failed;
    return GpuState::failing;
}

}  // namespace baton
