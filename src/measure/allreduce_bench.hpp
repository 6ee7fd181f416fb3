// `baton bench allreduce`: NCCL's collectives between the local GPUs from one process
// (ncclCommInitAll, NCCL loaded with dlopen), sizes 8 B to 1 GiB, out-of-place and in-place, with
// nccl-tests' time, algbw and busbw (bench_math.hpp) and its column layout, so the figures compare
// directly. The GPU topology from NVML is printed above the table. A box whose GPUs talk over PCIe
// only is judged against its slowest GPU link; NVLink boxes are measured, not judged (NVML gives
// no dependable NVLink rate across generations and NVSwitch systems).
#pragma once

#include <cstdint>
#include <string>

#include "measure/bench_math.hpp"
#include "measure/bench_report.hpp"
#include "core/result.hpp"
#include "sample/sampler.hpp"

namespace baton::measure {

struct AllreduceOptions {
    std::string cuda_library, nccl_library, nvml_library;  // empty: the defaults (cuda_library.hpp)
    std::string python = "python3";                        // where to look for PyTorch's NCCL
    int gpus = 0;                                          // the first N GPUs; 0: every GPU
    Collective op = Collective::all_reduce;
    std::uint64_t min_bytes = 8;
    std::uint64_t max_bytes = std::uint64_t{1} << 30;  // sizes go x4 from min_bytes
    int warmup = 5, iters = 20;                        // nccl-tests' -w and -n defaults
    double deadline_seconds = 60;
    double ok_share = 0.85;
    std::string sys_root = "/sys";  // the GPUs' PCI configuration space (their max payload size)
    SamplerOptions sampler;
};

// Errors: "no CUDA driver", "no NCCL", fewer than 2 GPUs, a failing call (its error string), a call
// past the deadline.
Result<BenchReport> run_allreduce_bench(const AllreduceOptions& o);

}  // namespace baton::measure
