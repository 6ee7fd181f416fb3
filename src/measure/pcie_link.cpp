#include "measure/pcie_link.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "measure/bench_math.hpp"
#include "measure/file_text.hpp"
#include "measure/h2d_bench.hpp"

namespace baton::measure {

LinkCeiling gpu_pcie_ceiling(const GpuInfo& g, bool trained_max, const std::string& sys_root) {
    LinkCeiling out;
    const std::optional<unsigned> gen = trained_max ? g.pcie_generation_max : g.pcie_generation;
    const std::optional<unsigned> width = trained_max ? g.pcie_width_max : g.pcie_width;
    if (!gen || !width) {
        out.source = "NVML does not report this GPU's PCIe link";
        return out;
    }
    std::optional<unsigned> payload;
    if (!g.pci_bus_id.empty())
        payload = pcie_max_payload_from_config(
            file_text(sys_root + "/bus/pci/devices/" + normal_bus_id(g.pci_bus_id) + "/config"));
    const std::optional<PcieCeiling> c = pcie_ceiling(*gen, *width, payload.value_or(kDefaultMaxPayload));
    if (!c) {
        out.source = fmt::format("PCIe {}.0 x{}: a generation baton does not know", *gen, *width);
        return out;
    }
    out.bytes_per_second = c->bytes_per_second;
    out.source = fmt::format(
        "PCIe {}.0 x{} ({}), max payload {} B ({}): {}", *gen, *width,
        trained_max ? "its maximum, NVML" : "NVML, read under load", payload.value_or(kDefaultMaxPayload),
        payload ? "the device's config space" : "assumed: its config space is root's to read", c->derivation);
    return out;
}

}  // namespace baton::measure
