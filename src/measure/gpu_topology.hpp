// The links between the GPUs, as `nvidia-smi topo -m` shows them: NV<n> for n NVLinks between two
// GPUs (through NVSwitches: the fewer of the two GPUs' links to switches), else the nearest common PCIe ancestor (PIX
// one switch, PXB several, PHB the host bridge, NODE the NUMA node's bridges, SYS across sockets). Read from NVML for
// bench allreduce, which prints it above its table and judges a PCIe-only box against its slowest GPU link.
#pragma once

#include <string>
#include <vector>

#include "measure/call_deadline.hpp"

namespace baton::measure {

struct GpuTopology {
    std::vector<std::string> bus_ids;              // the GPUs in PCI bus order (baton's indices)
    std::vector<std::vector<std::string>> matrix;  // [i][j]: "X", "NV4", "PIX", "PXB", "PHB", "NODE", "SYS", "?"
    std::vector<unsigned> nvlinks;                 // active NVLinks of each GPU (to GPUs or to NVSwitches)
    std::string error;                             // why there is none ("" when read)
    bool any_nvlink() const;
};

// NVML's topology level (nvmlGpuTopologyLevel_t) as nvidia-smi names it.
const char* topology_level_name(int level);

// Reads the topology through NVML at `nvml_path` (empty: $BATON_NVML_LIBRARY, else
// libnvidia-ml.so.1), each call named for `w`.
GpuTopology read_gpu_topology(const std::string& nvml_path, CallWatch& w);

// The matrix for people, with its legend.
std::string topology_text(const GpuTopology& t);

}  // namespace baton::measure
