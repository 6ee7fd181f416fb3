// `baton bench memory`: host memory bandwidth, STREAM's copy (c = a) and triad (a = b + s*c)
// kernels on arrays four times the size of the last-level caches, with 1, 2, 4, ... threads up to
// the CPUs baton may run on, each thread pinned to a CPU and touching its own part of the arrays
// first (so the pages sit on its NUMA node). With several NUMA nodes, each node is also measured
// alone with its own CPUs. The best of several repetitions counts, as in STREAM.
#pragma once

#include <cstddef>
#include <string>

#include "measure/bench_report.hpp"
#include "sample/sampler.hpp"

namespace baton::measure {

struct MemoryBenchOptions {
    std::string sys_root = "/sys";  // caches, NUMA nodes, SMBIOS memory devices
    unsigned max_threads = 0;       // 0: every CPU baton may run on
    std::size_t array_bytes = 0;    // 0: 4 x the last-level caches, within [64 MiB, 1 GiB]
    int repeats = 5;
    double ok_share = 0.6;   // [bench] memory_ok_share: STREAM rarely passes 80 % of the DIMMs' peak
    SamplerOptions sampler;  // for what else ran meanwhile
};

BenchReport run_memory_bench(const MemoryBenchOptions& o);

}  // namespace baton::measure
