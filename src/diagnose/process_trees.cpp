#include "diagnose/process_trees.hpp"

#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "diagnose/series.hpp"
#include "sample/process_lookup.hpp"

namespace baton::diagnose {

namespace {

// Processes that start sessions, not jobs.
bool session_level(const ProcessInfo& p) {
    static constexpr std::string_view names[] = {
        "systemd",
        "init",
        "sshd",
        "bash",
        "zsh",
        "sh",
        "dash",
        "fish",
        "tmux: server",
        "tmux",
        "screen",
        "SCREEN",
        "login",
        "sudo",
        "su",
        "tini",
        "docker-init",
        "containerd-shim",
        "containerd-shim-runc-v2",
        "runc",
        "conmon",
        "jupyter-notebook",
        "jupyter-lab",
    };
    if (p.pid <= 1) return true;
    for (std::string_view n : names)
        if (p.name == n) return true;
    return false;
}

}  // namespace

std::uint32_t job_root(const Snapshot& s, std::uint32_t pid) {
    std::uint32_t at = pid;
    for (int depth = 0; depth < 4096; ++depth) {  // bounded: a hostile snapshot may hold a cycle
        const ProcessInfo* p = find_process(s, at);
        if (!p) return at;
        const ProcessInfo* parent = find_process(s, p->ppid);
        if (!parent || parent->pid == p->pid || session_level(*parent)) return at;
        at = parent->pid;
    }
    return at;
}

std::vector<const ProcessInfo*> process_and_descendants(const Snapshot& s, std::uint32_t pid) {
    return process_trees(s, {pid});
}

namespace {

using ProcessChildren = std::unordered_map<std::uint32_t, std::vector<const ProcessInfo*>>;

ProcessChildren children_by_parent(const Snapshot& s) {
    ProcessChildren kids;
    for (const ProcessInfo& p : s.processes)
        if (p.ppid != p.pid) kids[p.ppid].push_back(&p);
    return kids;
}

// Adds to `tree` (its roots already in it) their descendants not yet `seen`, breadth first.
void add_descendants(std::vector<const ProcessInfo*>& tree, const ProcessChildren& kids,
                     std::unordered_set<std::uint32_t>& seen) {
    for (std::size_t i = 0; i < tree.size(); ++i)
        if (auto it = kids.find(tree[i]->pid); it != kids.end())
            for (const ProcessInfo* c : it->second)
                if (seen.insert(c->pid).second) tree.push_back(c);
}

}  // namespace

std::vector<const ProcessInfo*> process_trees(const Snapshot& s, const std::vector<std::uint32_t>& roots) {
    std::vector<const ProcessInfo*> out;
    std::unordered_set<std::uint32_t> seen;
    for (std::uint32_t pid : roots)
        if (const ProcessInfo* p = find_process(s, pid); p && seen.insert(p->pid).second) out.push_back(p);
    if (!out.empty()) add_descendants(out, children_by_parent(s), seen);
    return out;
}

std::vector<std::vector<const ProcessInfo*>> process_tree_each(const Snapshot& s,
                                                               const std::vector<std::uint32_t>& roots) {
    std::vector<std::vector<const ProcessInfo*>> out(roots.size());
    if (roots.empty()) return out;
    const ProcessChildren kids = children_by_parent(s);
    std::unordered_set<std::uint32_t> seen;
    for (std::size_t r = 0; r < roots.size(); ++r) {
        if (const ProcessInfo* p = find_process(s, roots[r]); p && seen.insert(p->pid).second) out[r].push_back(p);
        add_descendants(out[r], kids, seen);
    }
    return out;
}

}  // namespace baton::diagnose
