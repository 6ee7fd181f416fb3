// `baton bench h2d`: copies between host and GPU through the CUDA driver API (dlopen'd
// libcuda.so.1): host-to-device and device-to-host from pinned (cuMemAllocHost) and pageable
// (malloc) memory, and device-to-device, sizes 4 KiB to 1 GiB. The pinned figures are judged
// against the PCIe link's peak from NVML's generation and width, read while the link is busy;
// a link that trained below its maximum is reported as pcie_degraded.
#pragma once

#include <cstdint>
#include <string>

#include "measure/bench_report.hpp"
#include "core/result.hpp"
#include "sample/sampler.hpp"

namespace baton::measure {

struct H2dOptions {
    std::string library;  // libcuda (empty: $BATON_CUDA_LIBRARY, else libcuda.so.1)
    int gpu = -1;         // baton's GPU index (PCI bus order); -1: every GPU
    std::uint64_t min_size = 4096;
    std::uint64_t max_size = std::uint64_t{1} << 30;  // sizes go x4 from min_size up to this
    std::uint64_t bytes_per_point = 256u << 20;       // each size copies at least this much (3 copies at least)
    double deadline_seconds = 30;                     // for each driver call
    double ok_share = 0.85;
    std::string sys_root = "/sys";  // the GPUs' PCI configuration space (their max payload size)
    SamplerOptions sampler;         // NVML's PCIe figures, and what else used the GPU
};

// Errors: "no CUDA driver: ...", a failing call with its error string, a call past the deadline.
Result<BenchReport> run_h2d_bench(const H2dOptions& o);

// The PCI bus id as NVML and CUDA both can write it ("00000000:3B:00.0", "0000:3b:00.0"), in one
// form for comparing: "0000:3b:00.0".
std::string normal_bus_id(const std::string& id);

}  // namespace baton::measure
