#include "sample/process_tree.hpp"

#include <unordered_set>

namespace baton {

ProcessTree::ProcessTree(const std::vector<ProcessInfo>& processes) : procs_(processes) {
    for (std::size_t i = 0; i < procs_.size(); ++i) index_[procs_[i].pid] = i;
    for (std::size_t i = 0; i < procs_.size(); ++i)
        if (procs_[i].ppid != procs_[i].pid) children_[procs_[i].ppid].push_back(i);
}

const std::vector<std::size_t>& ProcessTree::children(std::uint32_t pid) const {
    static const std::vector<std::size_t> none;
    auto it = children_.find(pid);
    return it == children_.end() ? none : it->second;
}

std::vector<std::size_t> ProcessTree::descendants(std::uint32_t pid) const {
    std::vector<std::size_t> out;
    std::unordered_set<std::uint32_t> visited{pid};
    std::vector<std::uint32_t> stack{pid};
    while (!stack.empty()) {
        std::uint32_t p = stack.back();
        stack.pop_back();
        for (std::size_t c : children(p)) {
            if (!visited.insert(procs_[c].pid).second) continue;
            out.push_back(c);
            stack.push_back(procs_[c].pid);
        }
    }
    return out;
}

ProcessTree::Totals ProcessTree::subtree_totals(std::uint32_t pid) const {
    Totals t;
    auto add = [&](const ProcessInfo& p) {
        ++t.processes;
        t.cpu_percent += p.cpu_percent.value_or(0);
        t.rss_bytes += p.rss_bytes;
        t.gpu_memory_bytes += p.gpu_memory_bytes.value_or(0);
    };
    if (auto it = index_.find(pid); it != index_.end()) add(procs_[it->second]);
    for (std::size_t c : descendants(pid)) add(procs_[c]);
    return t;
}

}  // namespace baton
