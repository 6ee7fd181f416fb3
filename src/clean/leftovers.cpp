#include "clean/leftovers.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "sample/process_lookup.hpp"

namespace baton::clean {

namespace {

// Reparented: its parent is init, or a user's service manager (systemd --user is the subreaper of a
// login session's orphans): neither started it.
bool adopted(const Snapshot& s, const ProcessInfo& p) {
    if (p.ppid <= 1) return true;
    const ProcessInfo* parent = find_process(s, p.ppid);
    return parent && parent->name == "systemd";
}

std::string gib(std::uint64_t bytes) {
    return format_gib(static_cast<double>(bytes));
}

}  // namespace

const char* leftover_kind_name(LeftoverKind k) {
    switch (k) {
        case LeftoverKind::gpu_orphan:
            return "gpu_orphan";
        case LeftoverKind::baton_leftover:
            return "baton_leftover";
        case LeftoverKind::defunct:
            return "defunct";
        case LeftoverKind::not_reaping:
            return "not_reaping";
    }
    return "?";
}

std::vector<Leftover> find_leftovers(const Snapshot& snap, const std::map<std::uint32_t, ProcessFacts>& facts,
                                     const CleanFilter& filter) {
    // baton clean and its ancestors (the shell, sudo, sshd) are never candidates.
    std::set<std::uint32_t> self;
    for (std::uint32_t pid = filter.caller_pid; pid > 1 && self.insert(pid).second;) {
        const ProcessInfo* p = find_process(snap, pid);
        if (!p) break;
        pid = p->ppid;
    }
    std::vector<Leftover> out;
    std::map<std::uint32_t, std::vector<const ProcessInfo*>> zombies_of;  // parent -> its defunct children
    for (const ProcessInfo& p : snap.processes) {
        if (self.count(p.pid) || p.pid <= 1) continue;
        const double age = p.start_time_ms ? static_cast<double>(snap.time_unix_ms - p.start_time_ms) / 1000.0 : 0;
        if (age < filter.older_than_seconds) continue;
        auto f = facts.find(p.pid);
        const ProcessFacts pf = f == facts.end() ? ProcessFacts{} : f->second;
        Leftover l;
        l.pid = p.pid;
        l.ppid = p.ppid;
        l.uid = p.uid;
        l.user = p.user;
        l.name = p.name;
        l.command = p.command;
        l.age_seconds = age;
        l.start_ticks = pf.start_ticks;
        l.gpu_memory_bytes = p.gpu_memory_bytes.value_or(0);
        l.gpus = p.gpu_indices;
        // --gpu N: only what holds that GPU (a defunct process holds none).
        if (filter.gpu && std::find(l.gpus.begin(), l.gpus.end(), *filter.gpu) == l.gpus.end()) continue;
        if (p.state == 'Z') {
            zombies_of[p.ppid].push_back(&p);
            continue;
        }
        const bool holds_gpu = l.gpu_memory_bytes > 0 || !l.gpus.empty();
        const bool group_gone = pf.pgid && pf.pgid != p.pid && !find_process(snap, pf.pgid);
        std::string gpu_text;
        if (holds_gpu) {
            std::string list;
            for (unsigned g : l.gpus) list += (list.empty() ? "GPU" : ", GPU") + std::to_string(g);
            gpu_text = l.gpu_memory_bytes ? fmt::format("holds {} on {}", gib(l.gpu_memory_bytes), list)
                                          : "holds " + (list.empty() ? std::string("a GPU") : list);
        }
        if (pf.owner_pid && !pf.owner_alive) {
            l.kind = LeftoverKind::baton_leftover;
            l.reason = fmt::format("left by baton (pid {}{}), which ended{}", *pf.owner_pid,
                                   pf.owner_label.empty() ? std::string() : ": " + pf.owner_label,
                                   holds_gpu ? "; " + gpu_text : std::string());
        } else if (holds_gpu && adopted(snap, p) && (group_gone || pf.launched_rank)) {
            l.kind = LeftoverKind::gpu_orphan;
            l.reason = gpu_text + "; its parent ended (now a child of " +
                       (p.ppid <= 1 ? std::string("init") : "pid " + std::to_string(p.ppid) + ", systemd") + ")" +
                       (group_gone ? fmt::format(", as did its process group's leader {}", pf.pgid)
                                   : std::string(", and it is a launcher's rank"));
        } else {
            continue;
        }
        if (filter.caller_uid != 0 && p.uid != filter.caller_uid) {
            l.left_alone = "another user's (" + p.user + "): only they or root can end it";
        } else {
            l.endable = true;
        }
        out.push_back(std::move(l));
    }
    // Defunct processes: their parent does not reap them. Listed with the parent; neither is ended
    // (a zombie cannot be, and the parent may be a live job).
    for (const auto& [ppid, zombies] : zombies_of) {
        if (zombies.empty()) continue;
        const ProcessInfo* parent = find_process(snap, ppid);
        for (const ProcessInfo* z : zombies) {
            Leftover l;
            l.kind = LeftoverKind::defunct;
            l.pid = z->pid;
            l.ppid = ppid;
            l.uid = z->uid;
            l.user = z->user;
            l.name = z->name;
            l.command = z->command;
            l.age_seconds = z->start_time_ms ? static_cast<double>(snap.time_unix_ms - z->start_time_ms) / 1000.0 : 0;
            l.reason = fmt::format("defunct: its parent {} ({}) has not reaped it", ppid, parent ? parent->name : "?");
            l.left_alone = "a defunct process is already dead: it goes when its parent reaps it or ends";
            out.push_back(std::move(l));
        }
        if (!parent || self.count(ppid) || ppid <= 1) continue;
        Leftover l;
        l.kind = LeftoverKind::not_reaping;
        l.pid = parent->pid;
        l.ppid = parent->ppid;
        l.uid = parent->uid;
        l.user = parent->user;
        l.name = parent->name;
        l.command = parent->command;
        l.age_seconds =
            parent->start_time_ms ? static_cast<double>(snap.time_unix_ms - parent->start_time_ms) / 1000.0 : 0;
        l.gpu_memory_bytes = parent->gpu_memory_bytes.value_or(0);
        l.gpus = parent->gpu_indices;
        l.reason = fmt::format("does not reap {} defunct child{}", zombies.size(), zombies.size() == 1 ? "" : "ren");
        l.left_alone =
            "alive and possibly working: end it yourself if it is stuck (kill " + std::to_string(parent->pid) + ")";
        out.push_back(std::move(l));
    }
    std::stable_sort(out.begin(), out.end(), [](const Leftover& a, const Leftover& b) {
        if (a.endable != b.endable) return a.endable;
        return a.gpu_memory_bytes > b.gpu_memory_bytes;
    });
    return out;
}

}  // namespace baton::clean
