#include "measure/gpu_topology.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "measure/h2d_bench.hpp"
#include "sample/gpu/nvml_library.hpp"

namespace baton::measure {

namespace {

constexpr unsigned kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS (Hopper)

}  // namespace

bool GpuTopology::any_nvlink() const {
    return std::any_of(nvlinks.begin(), nvlinks.end(), [](unsigned n) { return n > 0; });
}

const char* topology_level_name(int level) {
    switch (level) {
        case 0:
            return "X";
        case 10:
            return "PIX";
        case 20:
            return "PXB";
        case 30:
            return "PHB";
        case 40:
            return "NODE";
        case 50:
            return "SYS";
        default:
            return "?";
    }
}

GpuTopology read_gpu_topology(const std::string& given, CallWatch& w) {
    GpuTopology t;
    std::string path = given;
    if (path.empty()) {
        const char* env = std::getenv("BATON_NVML_LIBRARY");
        path = env && *env ? env : "libnvidia-ml.so.1";
    }
    Result<NvmlLibrary> loaded = load_nvml_library(path);
    if (!loaded.ok()) {
        t.error = loaded.error().message;
        return t;
    }
    const NvmlLibrary& L = *loaded;
    if (nvmlReturn_t rc = timed_call(w, "nvmlInit", L.init); rc != 0) {
        t.error = "nvmlInit: " + L.describe(rc);
        return t;
    }
    unsigned count = 0;
    timed_call(w, "nvmlDeviceGetCount", L.device_count, &count);
    struct Gpu {
        nvmlDevice_t handle = nullptr;
        std::string bus;
    };
    std::vector<Gpu> gpus;
    for (unsigned i = 0; i < count; ++i) {
        Gpu g;
        if (timed_call(w, "nvmlDeviceGetHandleByIndex", L.handle_by_index, i, &g.handle) != 0) continue;
        nvmlPciInfo_t pci{};
        if (L.pci_info) timed_call(w, "nvmlDeviceGetPciInfo_v3", L.pci_info, g.handle, &pci);
        g.bus = normal_bus_id(pci.busId);
        gpus.push_back(std::move(g));
    }
    std::sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return a.bus < b.bus; });
    const std::size_t n = gpus.size();
    t.matrix.assign(n, std::vector<std::string>(n, "?"));
    t.nvlinks.assign(n, 0);
    // NVLinks per pair (far end another GPU), and per GPU those to an NVSwitch (far end not a GPU).
    std::vector<std::vector<unsigned>> to(n, std::vector<unsigned>(n, 0));
    std::vector<unsigned> switched(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        t.bus_ids.push_back(gpus[i].bus);
        for (unsigned link = 0; link < kMaxNvLinks && L.nvlink_state && L.nvlink_remote_pci; ++link) {
            unsigned active = 0;
            if (timed_call(w, "nvmlDeviceGetNvLinkState", L.nvlink_state, gpus[i].handle, link, &active) != 0 ||
                !active)
                continue;
            ++t.nvlinks[i];
            nvmlPciInfo_t remote{};
            if (timed_call(w, "nvmlDeviceGetNvLinkRemotePciInfo_v2", L.nvlink_remote_pci, gpus[i].handle, link,
                           &remote) != 0)
                continue;
            bool to_gpu = false;
            for (std::size_t j = 0; j < n; ++j)
                if (normal_bus_id(remote.busId) == gpus[j].bus) {
                    ++to[i][j];
                    to_gpu = true;
                }
            if (!to_gpu) ++switched[i];
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            // Through NVSwitches every pair is NVLink-connected with the fewer of the two's switch
            // links, as nvidia-smi prints it (NV18 on an HGX H100/H200).
            const unsigned links = to[i][j] + std::min(switched[i], switched[j]);
            if (i == j) {
                t.matrix[i][j] = "X";
            } else if (links > 0) {
                t.matrix[i][j] = fmt::format("NV{}", links);
            } else if (L.topology_common_ancestor) {
                int level = -1;
                if (timed_call(w, "nvmlDeviceGetTopologyCommonAncestor", L.topology_common_ancestor, gpus[i].handle,
                               gpus[j].handle, &level) == 0)
                    t.matrix[i][j] = topology_level_name(level);
            }
        }
    }
    return t;
}

std::string topology_text(const GpuTopology& t) {
    if (!t.error.empty()) return "topology: unknown (" + t.error + ")\n";
    std::string out = "topology (NVML, as nvidia-smi topo -m):\n      ";
    for (std::size_t j = 0; j < t.bus_ids.size(); ++j) out += fmt::format(" {:>5}", fmt::format("GPU{}", j));
    out += "  NVLinks\n";
    for (std::size_t i = 0; i < t.bus_ids.size(); ++i) {
        out += fmt::format("  GPU{}", i);
        for (const std::string& cell : t.matrix[i]) out += fmt::format(" {:>5}", cell);
        out += fmt::format("  {:>7}\n", t.nvlinks[i]);
    }
    out +=
        "  NV#: that many NVLinks (directly or through NVSwitches); PIX: one PCIe switch; PXB: several; PHB: the\n"
        "  host bridge; NODE: across host bridges of one NUMA node; SYS: across sockets.\n";
    return out;
}

}  // namespace baton::measure
