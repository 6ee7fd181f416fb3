// gpu_xid: the XIDs a GPU reported within the window (the NVML event watch counts them: snapshot's
// gpus[].xid_errors), judged by what they call for (diagnose/xid_catalogue.hpp). docs/findings.md.
#include <algorithm>
#include <map>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "diagnose/rules.hpp"
#include "diagnose/xid_catalogue.hpp"

namespace baton::diagnose {

namespace {

Severity severity_of(XidAction a) {
    switch (a) {
        case XidAction::drain:
            return Severity::critical;
        case XidAction::consequence:
            return Severity::info;
        case XidAction::application:
        case XidAction::reset:
        case XidAction::unknown:
            break;
    }
    return Severity::warning;
}

// Which action decides the advice when a GPU reported several: the one that asks most of the operator.
int weight(XidAction a) {
    switch (a) {
        case XidAction::drain:
            return 4;
        case XidAction::reset:
            return 3;
        case XidAction::unknown:
            return 2;
        case XidAction::application:
            return 1;
        case XidAction::consequence:
            break;
    }
    return 0;
}

}  // namespace

void gpu_xid(const Window& w, unsigned index, std::vector<Finding>& out) {
    const GpuInfo* last = gpu_at(w.back(), index);
    if (!last || !last->xid_errors) return;
    // The counts grow from when baton began watching; the window's are the newest snapshot's less the
    // oldest one's. Where the oldest did not watch yet (baton had just started: the watch begins after
    // the first reading), or the window is one snapshot, every XID counted so far is the window's.
    const GpuInfo* first = w.size() > 1 ? gpu_at(w.front(), index) : nullptr;
    const std::vector<XidCount>* before = first && first->xid_errors ? &*first->xid_errors : nullptr;
    std::map<unsigned, std::uint64_t> seen;  // XID -> how many within the window
    for (const XidCount& x : *last->xid_errors) {
        std::uint64_t earlier = 0;
        if (before)
            for (const XidCount& b : *before)
                if (b.xid == x.xid) earlier = b.count;
        // Fewer than before: baton restarted within the window (a history's window), and counted afresh.
        if (x.count != earlier) seen[x.xid] = x.count > earlier ? x.count - earlier : x.count;
    }
    if (seen.empty()) return;
    XidAction worst = XidAction::consequence;
    std::string list;
    std::uint64_t total = 0;
    for (const auto& [xid, count] : seen) {
        const XidMeaning m = xid_meaning(xid);
        if (weight(m.action) > weight(worst)) worst = m.action;
        list += fmt::format("{}XID {} ({}){}", list.empty() ? "" : ", ", xid, m.name,
                            count > 1 ? fmt::format(" x{}", count) : "");
        total += count;
    }
    Finding f = make_finding("gpu_xid", severity_of(worst), fmt::format("gpu:{}", index),
                             fmt::format("GPU{} ({}) reported {}", index, last->uuid, list), xid_advice(worst, index));
    f.snippet =
        worst == XidAction::drain || worst == XidAction::reset
            ? fmt::format("sudo dmesg -T | grep -i xid\nsudo nvidia-smi -r -i {}   # with no process on it", index)
            : "sudo dmesg -T | grep -i xid";
    Evidence e;
    e.metric = "gpu.xid_errors";
    e.threshold = fmt::format("any XID; {} in the window, the decisive one asks to {}", total, xid_action_name(worst));
    e.samples = w.size();
    f.evidence.push_back(e);
    out.push_back(std::move(f));
}

}  // namespace baton::diagnose
