#include "serve/diagnosis_window.hpp"

#include <algorithm>

#include "diagnose/process_trees.hpp"

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
    std::vector<std::uint32_t> roots;
    for (const GpuInfo& g : s.gpus)
        for (const GpuProcess& gp : g.processes) roots.push_back(gp.our_pid());
    std::vector<std::uint32_t> keep;
    for (const ProcessInfo* p : diagnose::process_trees(s, roots)) keep.push_back(p->pid);
    std::sort(keep.begin(), keep.end());
    auto& ps = s.processes;
    ps.erase(std::remove_if(ps.begin(), ps.end(),
                            [&](const ProcessInfo& p) {
                                // (one that read or wrote counts for io_wait_high's names, CPU or not)
                                return p.cpu_percent.value_or(1) <= 0 && p.read_bytes_per_second.value_or(0) <= 0 &&
                                       p.write_bytes_per_second.value_or(0) <= 0 &&
                                       !std::binary_search(keep.begin(), keep.end(), p.pid);
                            }),
             ps.end());
    ps.shrink_to_fit();
}

void DiagnosisWindow::add(const Snapshot& s, double window_seconds) {
    if (!window_.empty()) keep_window_processes(window_.back());
    window_.push_back(copy_without_texts(s));
    const double oldest = diagnose::seconds(window_.back()) - window_seconds;
    window_.erase(window_.begin(), std::find_if(window_.begin(), window_.end(),
                                                [&](const Snapshot& x) { return diagnose::seconds(x) >= oldest; }));
}

}  // namespace baton::serve
