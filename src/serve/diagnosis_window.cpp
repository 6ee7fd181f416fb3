#include "serve/diagnosis_window.hpp"

#include <algorithm>

namespace baton::serve {

namespace {

// A copy for the window: the processes without their command lines and cgroups. (Copied, then
// dropped: two small allocations a process, cheaper than listing every other field here.)
Snapshot copy_without_texts(const Snapshot& s) {
    Snapshot w = s;
    for (ProcessInfo& p : w.processes) {
        std::string().swap(p.command);
        std::string().swap(p.cgroup);
    }
    return w;
}

}  // namespace

void keep_window_processes(Snapshot& s) {
    // Children by parent, to walk the GPU processes' trees.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> children;  // (ppid, pid), sorted
    children.reserve(s.processes.size());
    for (const ProcessInfo& p : s.processes)
        if (p.ppid != p.pid) children.emplace_back(p.ppid, p.pid);
    std::sort(children.begin(), children.end());
    std::vector<std::uint32_t> keep;
    for (const GpuInfo& g : s.gpus)
        for (const GpuProcess& gp : g.processes) keep.push_back(gp.our_pid());
    // Breadth first; a pid met twice (two GPUs, a hostile cycle) is walked again at most once per
    // GPU process, and the walk stops at the table's size.
    for (std::size_t i = 0; i < keep.size() && keep.size() <= 2 * s.processes.size() + 64; ++i) {
        auto it = std::lower_bound(children.begin(), children.end(), std::make_pair(keep[i], std::uint32_t{0}));
        for (; it != children.end() && it->first == keep[i]; ++it) keep.push_back(it->second);
    }
    std::sort(keep.begin(), keep.end());
    auto& ps = s.processes;
    ps.erase(std::remove_if(ps.begin(), ps.end(),
                            [&](const ProcessInfo& p) {
                                return p.cpu_percent.value_or(1) <= 0 &&
                                       !std::binary_search(keep.begin(), keep.end(), p.pid);
                            }),
             ps.end());
    ps.shrink_to_fit();
}

void DiagnosisWindow::add(const Snapshot& s, double window_seconds) {
    if (!window_.empty()) keep_window_processes(window_.back());
    window_.push_back(copy_without_texts(s));
    const double oldest = seconds(window_.back()) - window_seconds;
    window_.erase(window_.begin(), std::find_if(window_.begin(), window_.end(),
                                                [&](const Snapshot& x) { return seconds(x) >= oldest; }));
}

}  // namespace baton::serve
