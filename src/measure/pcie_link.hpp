// The ceiling a GPU's PCIe link sets on copies and on a ring of PCIe GPUs: NVML's generation and
// width, and the Max_Payload_Size the device was set to (its PCI configuration space in sysfs, which
// root reads whole; 256 bytes, the common server setting, when it cannot be read). The arithmetic
// is bench_math's pcie_ceiling; docs/bench.md has the derivation and its sources.
#pragma once

#include <optional>
#include <string>

#include "sample/snapshot.hpp"

namespace baton::measure {

struct LinkCeiling {
    std::optional<double> bytes_per_second;  // none: NVML reports no link for this GPU
    std::string source;                      // what it was made of, for the report's "peak from"
};

// The payload size assumed when the configuration space cannot be read.
inline constexpr unsigned kDefaultMaxPayload = 256;

// `trained_max`: judge against the link's maximum generation and width (a ring's potential) rather
// than what it runs at now (the link under load, for copies).
LinkCeiling gpu_pcie_ceiling(const GpuInfo& g, bool trained_max, const std::string& sys_root);

}  // namespace baton::measure
