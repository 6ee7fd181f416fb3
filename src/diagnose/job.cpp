#include "diagnose/job.hpp"

#include <string_view>
#include <unordered_map>

#include "diagnose/series.hpp"

namespace baton {

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
        const ProcessInfo* p = process_at(s, at);
        if (!p) return at;
        const ProcessInfo* parent = process_at(s, p->ppid);
        if (!parent || parent->pid == p->pid || session_level(*parent)) return at;
        at = parent->pid;
    }
    return at;
}

std::vector<const ProcessInfo*> process_and_descendants(const Snapshot& s, std::uint32_t pid) {
    std::unordered_map<std::uint32_t, std::vector<const ProcessInfo*>> kids;
    for (const ProcessInfo& p : s.processes)
        if (p.ppid != p.pid) kids[p.ppid].push_back(&p);
    std::vector<const ProcessInfo*> out;
    const ProcessInfo* root = process_at(s, pid);
    if (!root) return out;
    out.push_back(root);
    for (std::size_t i = 0; i < out.size() && out.size() < s.processes.size(); ++i)
        if (auto it = kids.find(out[i]->pid); it != kids.end())
            for (const ProcessInfo* c : it->second) out.push_back(c);
    return out;
}

}  // namespace baton
