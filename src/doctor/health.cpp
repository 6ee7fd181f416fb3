#include "doctor/health.hpp"

#include <map>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "diagnose/xid_catalogue.hpp"

namespace baton::doctor {

namespace {

using diagnose::XidAction;

std::string gpu_name(const GpuInfo& g) {
    return fmt::format("GPU{} ({})", g.index, g.pci_bus_id);
}

CheckItem item(const char* id, CheckStatus status, const char* title, std::string detail, std::string fix = {}) {
    return {id, status, title, std::move(detail), std::move(fix)};
}

bool no_driver(const Snapshot& s) {
    return s.gpus.empty() && s.gpu_state != GpuState::no_gpus;
}

void nvml(const HealthFacts& f, std::vector<CheckItem>& out) {
    const char* title = "NVML initialises and finds the GPUs";
    const Snapshot& s = f.snapshot;
    const auto n = static_cast<unsigned>(s.gpus.size());
    if (f.expect_gpus && *f.expect_gpus == 0 && n == 0) {
        out.push_back(item("nvml", CheckStatus::pass, title, "no GPU, as expected"));
        return;
    }
    if (no_driver(s)) {
        out.push_back(item("nvml", CheckStatus::fail, title, s.gpu_status,
                           "Check the driver: nvidia-smi, the kernel log (sudo dmesg -T | grep -i nvrm), and that the "
                           "nvidia module is loaded; on a node without GPUs pass --expect-gpus 0."));
        return;
    }
    if (f.expect_gpus && *f.expect_gpus != n) {
        out.push_back(item("nvml", CheckStatus::fail, title,
                           fmt::format("{} GPUs found, {} expected", n, *f.expect_gpus),
                           "A GPU the driver no longer enumerates has usually fallen off the bus: look for XID 79 "
                           "in the kernel log (sudo dmesg -T | grep -i xid), reboot, and reseat or replace it if it "
                           "stays missing."));
        return;
    }
    if (n == 0) {
        out.push_back(item("nvml", CheckStatus::fail, title, s.gpu_status,
                           "The driver is loaded but sees no GPU: check lspci for NVIDIA devices; on a node "
                           "without GPUs pass --expect-gpus 0."));
        return;
    }
    out.push_back(item("nvml", CheckStatus::pass, title,
                       fmt::format("{} GPU{}, driver {}", n, n == 1 ? "" : "s", s.gpu_driver_version.value_or("?"))));
}

void gpu_lost(const HealthFacts& f, std::vector<CheckItem>& out) {
    const char* title = "every GPU answers";
    bool any = false;
    for (const GpuInfo& g : f.snapshot.gpus) {
        if (g.lost) {
            out.push_back(item("gpu_lost", CheckStatus::fail, title,
                               fmt::format("{}: lost, it fell off the bus ({})", gpu_name(g), g.uuid),
                               diagnose::xid_advice(XidAction::drain, g.index)));
            any = true;
        } else if (g.stale || g.error) {
            out.push_back(
                item("gpu_lost", CheckStatus::fail, title,
                     fmt::format("{}: NVML does not answer: {}", gpu_name(g), g.error.value_or(f.snapshot.gpu_status)),
                     "A driver call that hangs means a GPU or driver in trouble: look at the kernel log "
                     "(sudo dmesg -T | grep -i -e xid -e nvrm) and reboot the node."));
            any = true;
        }
    }
    if (!any)
        out.push_back(item("gpu_lost", f.snapshot.gpus.empty() ? CheckStatus::skip : CheckStatus::pass, title,
                           f.snapshot.gpus.empty() ? "no GPU" : "every GPU answered"));
}

std::string wall_time(const HealthFacts& f, const KernelXid& x) {
    if (!x.seconds_since_boot || !f.boot_unix_seconds) return {};
    const auto ms = static_cast<std::int64_t>((*f.boot_unix_seconds + *x.seconds_since_boot) * 1000.0);
    return " at " + rfc3339_utc(ms / 1000 * 1000).substr(0, 19) + "Z";
}

void xids(const HealthFacts& f, std::vector<CheckItem>& out) {
    const char* title = "no XID since boot that asks for a reset or a drain (the kernel log)";
    if (!f.kernel_log_error.empty()) {
        out.push_back(item("xid", CheckStatus::skip, title, f.kernel_log_error));
        return;
    }
    // By GPU (the kernel names it by PCI address), each XID counted with its newest line.
    struct Seen {
        std::size_t count = 0;
        const KernelXid* last = nullptr;
    };
    std::map<std::string, std::map<unsigned, Seen>> by_gpu;
    for (const KernelXid& x : f.kernel_xids) {
        Seen& s = by_gpu[x.pci][x.xid];
        ++s.count;
        s.last = &x;
    }
    std::vector<std::string> job_faults;
    bool failed = false;
    for (const auto& [pci, seen] : by_gpu) {
        const GpuInfo* gpu = nullptr;
        for (const GpuInfo& g : f.snapshot.gpus)
            if (kernel_pci_name(g.pci_bus_id) == pci) gpu = &g;
        const std::string who = gpu ? gpu_name(*gpu) : "the GPU at PCI " + pci;
        std::string list, mine;
        XidAction worst = XidAction::consequence;
        for (const auto& [xid, s] : seen) {
            const diagnose::XidMeaning m = diagnose::xid_meaning(xid);
            if (m.action != XidAction::drain && m.action != XidAction::reset) {
                job_faults.push_back(fmt::format("{} XID {} x{}", who, xid, s.count));
                mine += fmt::format("{}XID {} x{}", mine.empty() ? "" : ", ", xid, s.count);
                continue;
            }
            if (m.action == XidAction::drain) worst = XidAction::drain;
            if (m.action == XidAction::reset && worst != XidAction::drain) worst = XidAction::reset;
            list += fmt::format("{}XID {} ({}){}{}", list.empty() ? "" : ", ", xid, m.name,
                                s.count > 1 ? fmt::format(" x{}", s.count) : "", wall_time(f, *s.last));
        }
        if (list.empty()) continue;
        failed = true;
        // The jobs' own faults on this GPU are in its line too (they do not fail it).
        out.push_back(item("xid", CheckStatus::fail, title,
                           who + ": " + list + (mine.empty() ? "" : "; the jobs' own faults: " + mine),
                           diagnose::xid_advice(worst, gpu ? gpu->index : 0) +
                               " Once dealt with, sudo dmesg -C forgets the lines (or reboot)."));
    }
    if (failed) return;
    std::string detail = f.kernel_xids.empty() ? "none in the kernel log" : "none that asks for a reset or a drain";
    if (!job_faults.empty()) {
        detail += "; the jobs' own faults: ";
        for (std::size_t i = 0; i < job_faults.size(); ++i) detail += (i ? ", " : "") + job_faults[i];
    }
    CheckItem passed = item("xid", CheckStatus::pass, title, detail);
    passed.say = !job_faults.empty();  // what the check lists is printed, though it passes
    out.push_back(std::move(passed));
}

void ecc(const HealthFacts& f, std::vector<CheckItem>& out) {
    const char* title = "no uncorrected ECC error since the driver loaded";
    bool any = false, known = false;
    for (const GpuInfo& g : f.snapshot.gpus) {
        if (!g.ecc_uncorrected_volatile) continue;
        known = true;
        if (*g.ecc_uncorrected_volatile == 0) continue;
        any = true;
        out.push_back(item("ecc", CheckStatus::fail, title,
                           fmt::format("{}: {} uncorrected ECC errors", gpu_name(g), *g.ecc_uncorrected_volatile),
                           diagnose::xid_advice(XidAction::drain, g.index)));
    }
    if (!any)
        out.push_back(
            item("ecc", known ? CheckStatus::pass : CheckStatus::skip, title, known ? "none" : "ECC not reported"));
}

void row_remap(const HealthFacts& f, std::vector<CheckItem>& out) {
    const char* title = "no row remapping pending or failed";
    bool any = false, known = false;
    for (const GpuInfo& g : f.snapshot.gpus) {
        if (!g.remapping_pending && !g.remapping_failed) continue;
        known = true;
        if (g.remapping_failed.value_or(false)) {
            any = true;
            out.push_back(
                item("row_remap", CheckStatus::fail, title,
                     fmt::format("{}: a row remapping failed: the GPU has run out of spare rows", gpu_name(g)),
                     "The GPU's memory can no longer repair itself: drain the node and replace the GPU "
                     "(collect nvidia-bug-report.sh for the RMA)."));
        } else if (g.remapping_pending.value_or(false)) {
            any = true;
            out.push_back(item("row_remap", CheckStatus::fail, title,
                               fmt::format("{}: a row remapping waits for the GPU's reset", gpu_name(g)),
                               diagnose::xid_advice(XidAction::reset, g.index)));
        }
    }
    if (!any)
        out.push_back(item("row_remap", known ? CheckStatus::pass : CheckStatus::skip, title,
                           known ? "none" : "row remapping not reported (before Ampere, or not supported)"));
}

void pcie_link(const HealthFacts& f, std::vector<CheckItem>& out) {
    const char* title = "PCIe links at their maximum under load";
    bool any = false, known = false;
    for (const GpuInfo& g : f.snapshot.gpus) {
        if (!g.pcie_generation || !g.pcie_generation_max || !g.pcie_width || !g.pcie_width_max) continue;
        known = true;
        const bool busy = g.utilization_percent.value_or(0) >= f.busy_percent;
        const bool narrow = *g.pcie_width < *g.pcie_width_max;
        const bool slow = *g.pcie_generation < *g.pcie_generation_max;
        const std::string link =
            fmt::format("{}: PCIe gen {} x{} (its maximum gen {} x{})", gpu_name(g), *g.pcie_generation, *g.pcie_width,
                        *g.pcie_generation_max, *g.pcie_width_max);
        const char* fix =
            "A link trained below its maximum cuts host-to-GPU bandwidth: reseat the GPU or its riser, check the "
            "slot's BIOS setting, and baton bench h2d to measure it.";
        if (busy && (narrow || slow)) {
            any = true;
            out.push_back(item("pcie_link", CheckStatus::fail, title,
                               link + fmt::format(" while {:.0f} % busy", *g.utilization_percent), fix));
        } else if (narrow) {
            // Idle GPUs lower the link's generation to save power, never its width.
            any = true;
            out.push_back(item("pcie_link", CheckStatus::warn, title, link + " while idle", fix));
        }
    }
    if (!any)
        out.push_back(item("pcie_link", known ? CheckStatus::pass : CheckStatus::skip, title,
                           known ? "every link at its maximum width (generation judged under load)" : "not reported"));
}

}  // namespace

const std::vector<std::string>& health_check_ids() {
    static const std::vector<std::string> ids = {"nvml", "gpu_lost", "xid", "ecc", "row_remap", "pcie_link"};
    return ids;
}

std::vector<CheckItem> health_checks(const HealthFacts& f) {
    std::vector<CheckItem> out;
    nvml(f, out);
    gpu_lost(f, out);
    xids(f, out);
    ecc(f, out);
    row_remap(f, out);
    pcie_link(f, out);
    return out;
}

}  // namespace baton::doctor
