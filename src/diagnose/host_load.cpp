#include "diagnose/host_load.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/units.hpp"

namespace baton::diagnose {

namespace {

std::optional<double> measure(const ProcessInfo& p, LoadKind kind) {
    switch (kind) {
        case LoadKind::cpu:
            return p.cpu_percent;
        case LoadKind::io:
            if (!p.read_bytes_per_second && !p.write_bytes_per_second) return std::nullopt;
            return p.read_bytes_per_second.value_or(0) + p.write_bytes_per_second.value_or(0);
        case LoadKind::memory:
            return static_cast<double>(p.rss_bytes);
    }
    return std::nullopt;
}

std::string amount(double v, LoadKind kind) {
    switch (kind) {
        case LoadKind::cpu:
            return fmt::format("{:.0f} %", v);
        case LoadKind::io:
            return format_rate(v);
        case LoadKind::memory:
            return format_size(static_cast<std::uint64_t>(v));
    }
    return "";
}

}  // namespace

std::optional<LoadKind> load_kind_of_rule(std::string_view rule) {
    if (rule == "cpu_load_high" || rule == "cpu_oversubscribed") return LoadKind::cpu;
    if (rule == "io_wait_high") return LoadKind::io;
    if (rule == "swap_active" || rule == "swap_thrash" || rule == "host_memory_pressure") return LoadKind::memory;
    return std::nullopt;
}

std::vector<ProcessLoad> load_by_process(const Window& w, LoadKind kind) {
    // A pid with its start time is one process (a pid reused within the window is another).
    std::map<std::pair<std::uint32_t, std::uint64_t>, ProcessLoad> by;
    if (w.empty()) return {};
    // Memory held is a level, not a rate: its holders are the newest snapshot's (the agent keeps
    // only the busy processes in its older ones: serve/diagnosis_window.hpp).
    const std::size_t first = kind == LoadKind::memory ? w.size() - 1 : 0;
    for (std::size_t i = first; i < w.size(); ++i)
        for (const ProcessInfo& p : w[i].processes) {
            const std::optional<double> v = measure(p, kind);
            if (!v || *v <= 0) continue;
            ProcessLoad& l = by[{p.pid, p.start_ticks}];
            l.pid = p.pid;
            l.name = p.name;
            l.user = p.user.empty() ? std::to_string(p.uid) : p.user;
            l.value += *v;
        }
    std::vector<ProcessLoad> out;
    for (auto& [key, l] : by) {
        l.value /= static_cast<double>(w.size() - first);
        out.push_back(std::move(l));
    }
    std::sort(out.begin(), out.end(), [](const ProcessLoad& a, const ProcessLoad& b) {
        if (a.value != b.value) return a.value > b.value;
        return a.pid < b.pid;
    });
    return out;
}

std::string load_text(const std::vector<ProcessLoad>& loads, LoadKind kind, std::size_t count) {
    // Who makes under a twentieth of the load is not worth a name (a kernel thread's 0 %).
    double all = 0;
    for (const ProcessLoad& l : loads) all += l.value;
    const double floor = all / 20;
    std::string out;
    std::map<std::string, double> users;
    for (const ProcessLoad& l : loads) users[l.user] += l.value;
    for (std::size_t i = 0; i < loads.size() && i < count && loads[i].value >= floor; ++i)
        out += fmt::format("{}{} (pid {}, {}) {}", i ? ", " : "", loads[i].name, loads[i].pid, loads[i].user,
                           amount(loads[i].value, kind));
    std::vector<std::pair<std::string, double>> order;
    for (const auto& [user, v] : users)
        if (v >= floor) order.emplace_back(user, v);
    if (order.size() > 1) {
        std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
        out += "; by user:";
        for (std::size_t i = 0; i < order.size() && i < count; ++i)
            out += fmt::format("{} {} {}", i ? "," : "", order[i].first, amount(order[i].second, kind));
    }
    return out;
}

std::optional<double> share_of_load(const std::vector<ProcessLoad>& loads, const std::set<std::uint32_t>& pids) {
    double all = 0, theirs = 0;
    for (const ProcessLoad& l : loads) {
        all += l.value;
        if (pids.count(l.pid)) theirs += l.value;
    }
    if (all <= 0) return std::nullopt;
    return 100 * theirs / all;
}

}  // namespace baton::diagnose
