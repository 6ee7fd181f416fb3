#include "ui/process_rows.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

namespace baton::ui {

char sort_key_letter(SortKey k) {
    switch (k) {
        case SortKey::gpu_memory:
            return 'g';
        case SortKey::cpu:
            return 'c';
        case SortKey::memory:
            return 'm';
        case SortKey::pid:
            return 'p';
        case SortKey::io:
            return 'i';
        case SortKey::user:
            return 'u';
        case SortKey::command:
            return 'n';
    }
    return 'g';
}

const char* sort_key_name(SortKey k) {
    switch (k) {
        case SortKey::gpu_memory:
            return "GPU memory";
        case SortKey::cpu:
            return "CPU";
        case SortKey::memory:
            return "RSS";
        case SortKey::pid:
            return "PID";
        case SortKey::io:
            return "I/O";
        case SortKey::user:
            return "user";
        case SortKey::command:
            return "command";
    }
    return "GPU memory";
}

namespace {

bool contains_nocase(std::string_view hay, std::string_view needle) {
    if (needle.empty()) return true;
    auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
    });
    return it != hay.end();
}

// Kernel threads are kthreadd (pid 2) and its children; inside a container none are visible.
bool is_kernel_thread(const ProcessInfo& p) {
    return p.pid == 2 || p.ppid == 2;
}

bool matches(const ProcessInfo& p, const ViewState& v) {
    if (!v.kernel_threads && is_kernel_thread(p)) return false;
    if (v.gpu_only && !p.gpu_memory_bytes && p.gpu_indices.empty()) return false;
    if (v.filter.empty()) return true;
    return contains_nocase(p.command, v.filter) || contains_nocase(p.user, v.filter) ||
           std::to_string(p.pid) == v.filter;
}

double io_rate(const ProcessInfo& p) {
    return p.read_bytes_per_second.value_or(0) + p.write_bytes_per_second.value_or(0);
}

// Sort values of a row: its own, or in tree mode its group's for the additive columns, so
// that a trainer with busy DataLoader workers sorts as busy.
struct SortValues {
    std::uint64_t gpu_memory;
    double cpu;
    std::uint64_t rss;
    double io;
};

// true when a sorts before b.
bool before(SortKey k, const ProcessInfo& a, const SortValues& ka, const ProcessInfo& b, const SortValues& kb) {
    switch (k) {
        case SortKey::gpu_memory:
            if (ka.gpu_memory != kb.gpu_memory) return ka.gpu_memory > kb.gpu_memory;
            if (ka.cpu != kb.cpu) return ka.cpu > kb.cpu;
            if (ka.rss != kb.rss) return ka.rss > kb.rss;
            break;
        case SortKey::cpu:
            if (ka.cpu != kb.cpu) return ka.cpu > kb.cpu;
            break;
        case SortKey::memory:
            if (ka.rss != kb.rss) return ka.rss > kb.rss;
            break;
        case SortKey::io:
            if (ka.io != kb.io) return ka.io > kb.io;
            break;
        case SortKey::user:
            if (a.user != b.user) return a.user < b.user;
            break;
        case SortKey::command:
            if (a.command != b.command) return a.command < b.command;
            break;
        case SortKey::pid:
            break;
    }
    return a.pid < b.pid;
}

}  // namespace

std::vector<ProcessRow> process_rows(const Snapshot& s, const ViewState& v, const std::vector<ProcessInfo>& extra) {
    std::unordered_map<std::uint32_t, double> sm;
    for (const GpuInfo& g : s.gpus)
        for (const GpuProcess& gp : g.processes)
            if (gp.sm_utilization_percent) sm[gp.our_pid()] += *gp.sm_utilization_percent;

    std::vector<ProcessRow> rows;
    for (const auto* list : {&s.processes, &extra}) {
        for (const ProcessInfo& p : *list) {
            if (!matches(p, v)) continue;
            ProcessRow r;
            r.process = &p;
            r.outside = list == &extra;
            if (auto it = sm.find(p.pid); it != sm.end()) r.gpu_sm_percent = it->second;
            rows.push_back(std::move(r));
        }
    }
    auto own_key = [](const ProcessInfo& p) {
        return SortValues{p.gpu_memory_bytes.value_or(0), p.cpu_percent.value_or(0), p.rss_bytes, io_rate(p)};
    };
    if (!v.tree) {
        std::sort(rows.begin(), rows.end(), [&](const ProcessRow& a, const ProcessRow& b) {
            return before(v.sort, *a.process, own_key(*a.process), *b.process, own_key(*b.process));
        });
        return rows;
    }

    // Tree: children among the shown rows; roots are rows whose parent is not shown.
    std::unordered_map<std::uint32_t, std::size_t> at;
    for (std::size_t i = 0; i < rows.size(); ++i) at[rows[i].process->pid] = i;
    std::unordered_map<std::uint32_t, std::vector<std::size_t>> kids;
    std::vector<std::size_t> roots;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const ProcessInfo& p = *rows[i].process;
        if (p.ppid != p.pid && at.count(p.ppid))
            kids[p.ppid].push_back(i);
        else
            roots.push_back(i);
    }
    // Group totals, bottom up (iterative: a deep chain must not overflow the stack; a cycle,
    // impossible in a real /proc, leaves its members out of the roots and so out of the view).
    std::vector<SortValues> group(rows.size());
    std::vector<std::size_t> order;
    std::unordered_set<std::size_t> seen;
    for (std::size_t r : roots) {
        std::vector<std::size_t> stack{r};
        while (!stack.empty()) {
            std::size_t i = stack.back();
            stack.pop_back();
            if (!seen.insert(i).second) continue;
            order.push_back(i);
            if (auto it = kids.find(rows[i].process->pid); it != kids.end())
                for (std::size_t c : it->second) stack.push_back(c);
        }
    }
    for (std::size_t i : order) group[i] = own_key(*rows[i].process);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const ProcessInfo& p = *rows[*it].process;
        if (auto k = kids.find(p.pid); k != kids.end()) {
            rows[*it].has_children = true;
            for (std::size_t c : k->second) {
                group[*it].gpu_memory += group[c].gpu_memory;
                group[*it].cpu += group[c].cpu;
                group[*it].rss += group[c].rss;
                group[*it].io += group[c].io;
            }
        }
        rows[*it].group_cpu_percent = group[*it].cpu;
        rows[*it].group_gpu_memory = group[*it].gpu_memory;
    }
    auto sort_ids = [&](std::vector<std::size_t>& ids) {
        std::sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
            return before(v.sort, *rows[a].process, group[a], *rows[b].process, group[b]);
        });
    };
    sort_ids(roots);
    for (auto& [pid, ids] : kids) sort_ids(ids);

    const char* branch = v.ascii ? "|- " : "├─ ";
    const char* last = v.ascii ? "`- " : "└─ ";
    const char* through = v.ascii ? "|  " : "│  ";
    std::vector<ProcessRow> out;
    out.reserve(rows.size());
    struct Visit {
        std::size_t row;
        std::string indent;  // prefix of this row's children
        std::string prefix;  // this row's own prefix
    };
    for (std::size_t r : roots) {
        std::vector<Visit> stack{{r, "", ""}};
        while (!stack.empty()) {
            Visit x = std::move(stack.back());
            stack.pop_back();
            ProcessRow row = rows[x.row];
            row.tree_prefix = x.prefix;
            out.push_back(std::move(row));
            auto it = kids.find(rows[x.row].process->pid);
            if (it == kids.end()) continue;
            const auto& ids = it->second;
            for (std::size_t k = ids.size(); k-- > 0;) {  // pushed in reverse: popped in order
                const bool is_last = k + 1 == ids.size();
                stack.push_back({ids[k], x.indent + (is_last ? "   " : through), x.indent + (is_last ? last : branch)});
            }
        }
    }
    return out;
}

}  // namespace baton::ui
