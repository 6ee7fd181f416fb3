#include "ui/hosts_layout.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/text_parse.hpp"
#include "diagnose/indicators.hpp"
#include "sample/process_lookup.hpp"
#include "ui/line_fit.hpp"

namespace baton::ui {

namespace {

constexpr int kFindingsPerHost = 3;

bool answering(const HostView& h) {
    return h.snapshot && (h.status == HostStatus::ok || h.status == HostStatus::stale);
}

Style status_style(HostStatus s) {
    switch (s) {
        case HostStatus::ok:
            return Style::best;
        case HostStatus::waiting:
            return Style::dim;
        case HostStatus::stale:
            return Style::elevated;
        default:
            return Style::alarm;
    }
}

Style severity_style(diagnose::Severity s) {
    switch (s) {
        case diagnose::Severity::critical:
            return Style::alarm;
        case diagnose::Severity::warning:
            return Style::elevated;
        case diagnose::Severity::info:
            break;
    }
    return Style::dim;
}

// One process on a GPU, as the hosts view names it.
struct Holder {
    std::uint32_t pid = 0;
    const ProcessInfo* process = nullptr;  // absent: not in the snapshot's table (another pid namespace)
    std::uint64_t memory = 0;
};

// The GPU's processes, most memory first, each once.
std::vector<Holder> gpu_holders(const Snapshot& s, const GpuInfo& g) {
    std::vector<Holder> out;
    for (const GpuProcess& gp : g.processes) {
        const std::uint32_t pid = gp.our_pid();
        auto it = std::find_if(out.begin(), out.end(), [&](const Holder& h) { return h.pid == pid; });
        if (it == out.end()) {
            out.push_back({pid, find_process(s, pid), 0});
            it = out.end() - 1;
        }
        it->memory += gp.used_memory_bytes.value_or(0);
    }
    std::stable_sort(out.begin(), out.end(), [](const Holder& a, const Holder& b) { return a.memory > b.memory; });
    return out;
}

std::string holder_name(const Holder& h) {
    if (!h.process) return fmt::format("pid {}", h.pid);
    return printable(h.process->user) + " " +
           printable(h.process->command.empty() ? h.process->name : h.process->command);
}

bool contains(std::string_view hay, const std::string& needle_lower) {
    return text::ascii_lower(hay).find(needle_lower) != std::string::npos;
}

bool gpu_matches(const Snapshot& s, const GpuInfo& g, const std::string& needle) {
    if (contains(g.name, needle) || contains(fmt::format("gpu{}", g.index), needle)) return true;
    for (const Holder& h : gpu_holders(s, g))
        if (contains(std::to_string(h.pid), needle) ||
            (h.process && (contains(h.process->user, needle) || contains(h.process->command, needle))))
            return true;
    return false;
}

// What a host shows after the filter and `g`: its GPUs (all, or those that pass), or none at all.
struct ShownHost {
    const HostView* host = nullptr;
    std::vector<const GpuInfo*> gpus;
};

std::optional<ShownHost> shown_host(const HostView& h, const HostsViewState& v, const std::string& needle) {
    ShownHost out{&h, {}};
    const bool up = answering(h);
    if (v.free_only && !up) return std::nullopt;
    const bool whole =
        needle.empty() || contains(h.name, needle) || (up && contains(h.snapshot->host.hostname, needle));
    if (up)
        for (const GpuInfo& g : h.snapshot->gpus) {
            if (v.free_only && !gpu_is_free(g)) continue;
            if (!whole && !gpu_matches(*h.snapshot, g, needle)) continue;
            out.gpus.push_back(&g);
        }
    if (out.gpus.empty() && (v.free_only || !whole)) return std::nullopt;
    return out;
}

struct Figures {
    int gpus = 0, free = 0;
    double gpu_util = -1, cpu = -1, memory = -1;  // -1: not known
};

Figures figures(const HostView& h) {
    Figures f;
    if (!answering(h)) return f;
    const Snapshot& s = *h.snapshot;
    double util = 0;
    int with_util = 0;
    for (const GpuInfo& g : s.gpus) {
        ++f.gpus;
        f.free += gpu_is_free(g) ? 1 : 0;
        if (g.utilization_percent) {
            util += *g.utilization_percent;
            ++with_util;
        }
    }
    if (with_util) f.gpu_util = util / with_util;
    f.cpu = s.cpu.total.utilization_percent.value_or(-1);
    if (s.memory.total_bytes > 0)
        f.memory = 100.0 * static_cast<double>(s.memory.total_bytes - s.memory.available_bytes) /
                   static_cast<double>(s.memory.total_bytes);
    return f;
}

std::vector<ShownHost> sorted_hosts(const std::vector<HostView>& hosts, const HostsViewState& v) {
    const std::string needle = text::ascii_lower(v.filter);
    std::vector<ShownHost> out;
    for (const HostView& h : hosts)
        if (std::optional<ShownHost> s = shown_host(h, v, needle)) out.push_back(std::move(*s));
    if (v.sort == HostSort::given) return out;
    if (v.sort == HostSort::name) {
        std::stable_sort(out.begin(), out.end(),
                         [](const ShownHost& a, const ShownHost& b) { return a.host->name < b.host->name; });
        return out;
    }
    // Biggest first; hosts that do not answer (no figures) last, in the order given.
    const auto key = [&](const ShownHost& s) {
        const Figures f = figures(*s.host);
        switch (v.sort) {
            case HostSort::free_gpus:
                return answering(*s.host) ? static_cast<double>(f.free) : -1.0;
            case HostSort::gpu_util:
                return f.gpu_util;
            case HostSort::cpu:
                return f.cpu;
            default:
                return f.memory;
        }
    };
    std::stable_sort(out.begin(), out.end(), [&](const ShownHost& a, const ShownHost& b) { return key(a) > key(b); });
    return out;
}

class HostsLayout {
  public:
    HostsLayout(const std::vector<HostView>& hosts, const Thresholds& t, const HostsViewState& v, int w, int h)
        : hosts_(hosts), t_(t), v_(v), w_(w), h_(h) {}
    HostsLayoutResult build();

  private:
    Line title(const std::vector<ShownHost>& shown) const;
    Line host_line(const ShownHost& s, bool selected) const;
    Line gpu_line(const Snapshot& snap, const GpuInfo& g) const;
    std::vector<Line> findings(const HostView& h) const;
    Line status() const;
    std::vector<Line> help() const;

    const std::vector<HostView>& hosts_;
    const Thresholds& t_;
    const HostsViewState& v_;
    int w_, h_;
    // Across the hosts shown, so that their GPU columns line up: the widest model name (16 at
    // most), and whether any GPU reports SM activity (the others then show "SM -%").
    int name_width_ = 0;
    bool any_sm_ = false;
};

Line HostsLayout::title(const std::vector<ShownHost>& shown) const {
    int up = 0, gpus = 0, free = 0;
    std::vector<std::pair<HostStatus, int>> others;
    for (const HostView& h : hosts_) {
        if (answering(h)) {
            ++up;
            const Figures f = figures(h);
            gpus += f.gpus;
            free += f.free;
        }
        if (h.status == HostStatus::ok) continue;
        auto it = std::find_if(others.begin(), others.end(), [&](const auto& o) { return o.first == h.status; });
        if (it == others.end())
            others.emplace_back(h.status, 1);
        else
            ++it->second;
    }
    std::vector<Piece> p;
    p.push_back(text_piece(fmt::format("{} host{}:", hosts_.size(), hosts_.size() == 1 ? "" : "s"), Style::title));
    std::string states = fmt::format("{} answering", up);
    for (const auto& [status, n] : others) states += fmt::format(", {} {}", n, host_status_name(status));
    p.push_back(text_piece(states, others.empty() ? Style::plain : Style::elevated, 0));
    p.push_back(text_piece(fmt::format("  {} GPU{}, {} free", gpus, gpus == 1 ? "" : "s", free),
                           free ? Style::best : Style::plain, 0, false));
    if (shown.size() != hosts_.size())
        p.push_back(text_piece(fmt::format("  {} shown", shown.size()), Style::dim, 2, false));
    if (v_.free_only) p.push_back(text_piece("  free GPUs only", Style::elevated, 3, false));
    if (!v_.filter.empty())
        p.push_back(text_piece("  filter \"" + printable(v_.filter) + "\"", Style::elevated, 3, false));
    if (v_.sort != HostSort::given)
        p.push_back(text_piece(std::string("  by ") + host_sort_name(v_.sort), Style::dim, 1, false));
    return fit_pieces(std::move(p), w_, v_.ascii);
}

Line HostsLayout::host_line(const ShownHost& s, bool selected) const {
    const HostView& h = *s.host;
    std::vector<Piece> p;
    p.push_back(text_piece(printable(h.name), Style::title));
    if (answering(h) && h.snapshot->host.hostname != h.name && h.name.rfind(h.snapshot->host.hostname + ":", 0) != 0)
        p.push_back(text_piece("(" + printable(h.snapshot->host.hostname) + ")", Style::dim, 2));
    p.push_back(text_piece(" " + std::string(host_status_name(h.status)), status_style(h.status)));
    if (answering(h)) {
        const Snapshot& snap = *h.snapshot;
        const Figures f = figures(h);
        if (f.gpus)
            p.push_back(text_piece(fmt::format(" {} GPU{}, {} free", f.gpus, f.gpus == 1 ? "" : "s", f.free),
                                   f.free ? Style::best : Style::plain, 0));
        const std::optional<double> cpu = snap.cpu.total.utilization_percent;
        p.push_back(
            text_piece(fmt::format(" CPU {} of {}", cpu ? fmt::format("{:.0f}%", *cpu) : "-%", snap.host.cpu_count),
                       cpu ? style_for(diagnose::cpu_level(t_, *cpu)) : Style::dim, 4));
        if (snap.memory.total_bytes)
            p.push_back(text_piece(
                " mem " + compact_bytes(static_cast<double>(snap.memory.total_bytes - snap.memory.available_bytes)) +
                    "/" + compact_bytes(static_cast<double>(snap.memory.total_bytes)),
                Style::plain, 3));
    }
    if (!h.error.empty())
        p.push_back(text_piece(" " + printable(h.error), status_style(h.status), answering(h) ? 1 : 0));
    // A slow answer is worth a word (a loaded agent, a far link); a quick one is not.
    if (h.status != HostStatus::waiting && h.status != HostStatus::down && h.answer_seconds >= 0.1)
        p.push_back(text_piece(fmt::format(" answered in {:.1f} s", h.answer_seconds), Style::elevated, 1));
    Line l = fit_pieces(std::move(p), w_, v_.ascii);
    if (selected) {
        l.fill = Style::selected;
        for (Span& sp : l.spans) sp.style = Style::selected;
    }
    return l;
}

Line HostsLayout::gpu_line(const Snapshot& snap, const GpuInfo& g) const {
    std::vector<Piece> p;
    p.push_back(text_piece(fmt::format("  GPU{}", g.index), Style::title));
    p.push_back(text_piece(pad_right(short_gpu_name(g.name), name_width_), Style::plain, 2));
    if (g.error) {
        p.push_back(text_piece(printable(*g.error), Style::alarm));
        return fit_pieces(std::move(p), w_, v_.ascii);
    }
    const Style util_style = g.stale ? Style::dim : Style::plain;
    p.push_back(bar_piece(g.utilization_percent.value_or(0), util_style, 3, 8, 3));
    p.push_back(text_piece(percent_text(g.utilization_percent), util_style, 0, false));
    if (any_sm_) p.push_back(text_piece("SM" + percent_text(g.sm_activity_percent), util_style, 4));
    const std::optional<double> mem = diagnose::gpu_memory_percent(g);
    const std::optional<double> judged = diagnose::judged_memory_percent(g);
    const Style mem_style =
        g.stale ? Style::dim : (judged ? style_for(diagnose::gpu_memory_level(t_, *judged)) : Style::dim);
    p.push_back(bar_piece(mem.value_or(0), mem_style, 3, 8, 3));
    p.push_back(text_piece(pad_left(g.memory_used_bytes && g.memory_total_bytes
                                        ? compact_bytes(static_cast<double>(*g.memory_used_bytes)) + "/" +
                                              compact_bytes(static_cast<double>(*g.memory_total_bytes))
                                        : "-",
                                    9),
                           mem_style));
    p.push_back(
        text_piece(g.temperature_celsius ? fmt::format("{:>3.0f}C", *g.temperature_celsius) : "  -C", Style::plain, 5));
    p.push_back(
        text_piece(pad_left(g.power_watts ? fmt::format("{:.0f}W", *g.power_watts) : "-W", 5), Style::plain, 5));
    // The GPU's numbers take what they need of a narrow line; its holders get the rest.
    Line l = fit_pieces(std::move(p), std::max(w_ - 24, std::min(w_, 40)), v_.ascii);
    const int room = w_ - l.width() - 2;
    if (room <= 0) return l;
    const std::vector<Holder> holders = gpu_holders(snap, g);
    if (holders.empty()) {
        if (gpu_is_free(g))
            l.add("  ").add("free", Style::best);
        else
            l.add("  ").add(clip("in use, no process listed", room), Style::dim);
        return l;
    }
    const std::string more = holders.size() > 1 ? fmt::format(" (+{})", holders.size() - 1) : "";
    const int name_room = room - display_width(more);
    l.add("  ").add(clip(holder_name(holders.front()), std::max(0, name_room)));
    if (name_room > 0) l.add(more, Style::dim);
    return l;
}

std::vector<Line> HostsLayout::findings(const HostView& h) const {
    std::vector<Line> out;
    if (v_.free_only || !answering(h)) return out;
    std::vector<const diagnose::Finding*> order;
    for (const diagnose::Finding& f : h.findings) order.push_back(&f);
    std::stable_sort(order.begin(), order.end(),
                     [](const auto* a, const auto* b) { return a->severity > b->severity; });
    for (std::size_t i = 0; i < order.size() && static_cast<int>(i) < kFindingsPerHost; ++i) {
        Line l;
        l.add("  ").add(diagnose::severity_name(order[i]->severity), severity_style(order[i]->severity));
        l.add(" " + clip(printable(order[i]->summary), std::max(0, w_ - 12)));
        out.push_back(std::move(l));
    }
    if (order.size() > kFindingsPerHost) {
        Line l;
        l.add(fmt::format("  and {} more finding{} (Enter: the host's view)", order.size() - kFindingsPerHost,
                          order.size() - kFindingsPerHost == 1 ? "" : "s"),
              Style::dim);
        out.push_back(std::move(l));
    }
    return out;
}

Line HostsLayout::status() const {
    Line l;
    l.fill = Style::status;
    if (v_.prompt == HostsPrompt::filter) {
        l.add(clip("Filter: " + v_.edit + "_   (host, GPU model, user or command; Enter applies, Esc cancels)", w_),
              Style::status);
        return l;
    }
    if (v_.prompt == HostsPrompt::sort) {
        std::string s = "Sort hosts by:";
        for (HostSort k : kHostSorts) s += fmt::format(" {} {} ", host_sort_letter(k), host_sort_name(k));
        l.add(clip(s + " (Esc cancels)", w_), Style::status);
        return l;
    }
    if (!v_.message.empty()) {
        l.add(clip(v_.message, w_), Style::status);
        return l;
    }
    l.add(clip("Enter open host  / filter  g free GPUs  s sort  h help  q quit", w_), Style::status);
    return l;
}

std::vector<Line> HostsLayout::help() const {
    std::vector<Line> out;
    Line head;
    head.add("baton top --hosts keys", Style::title);
    out.push_back(std::move(head));
    for (const HostsKeyHelp& k : hosts_key_help()) {
        std::string keys = k.keys;
        keys.resize(std::max<std::size_t>(keys.size() + 1, 11), ' ');
        Line l;
        l.add(clip("  " + keys + k.help, w_));
        out.push_back(std::move(l));
    }
    for (const char* t : {"A GPU is free when no process is on it, it is under 10 % busy and under 5 % of its",
                          "memory is used. A host is stale when its agent's snapshot is old or it stopped",
                          "answering; down when it cannot be reached or did not answer in time."}) {
        Line l;
        l.add(clip(t, w_), Style::dim);
        out.push_back(std::move(l));
    }
    return out;
}

HostsLayoutResult HostsLayout::build() {
    HostsLayoutResult r;
    r.frame.width = w_;
    r.frame.height = h_;
    if (v_.help) {
        r.frame.lines = help();
        if (static_cast<int>(r.frame.lines.size()) > h_) r.frame.lines.resize(static_cast<std::size_t>(h_));
        return r;
    }
    const std::vector<ShownHost> shown = sorted_hosts(hosts_, v_);
    for (const ShownHost& s : shown)
        for (const GpuInfo* g : s.gpus) {
            name_width_ = std::min(16, std::max(name_width_, display_width(short_gpu_name(g->name))));
            any_sm_ = any_sm_ || g->sm_activity_percent.has_value();
        }
    std::size_t selected = 0;
    for (std::size_t i = 0; i < shown.size(); ++i) {
        r.shown.push_back(shown[i].host->name);
        if (shown[i].host->name == v_.selected) selected = i;
    }
    // Every block's lines, then the window of them that fits, with the selected host's block in it.
    std::vector<Line> body;
    std::vector<int> owner;
    int sel_from = 0, sel_to = 0;
    for (std::size_t i = 0; i < shown.size(); ++i) {
        const ShownHost& s = shown[i];
        const bool is_selected = v_.show_selection && i == selected;
        if (i == selected) sel_from = static_cast<int>(body.size());
        const auto push = [&](Line l) {
            body.push_back(std::move(l));
            owner.push_back(static_cast<int>(i));
        };
        push(host_line(s, is_selected));
        if (answering(*s.host)) {
            if (s.host->snapshot->gpus.empty()) {
                Line l;
                l.add("  no GPUs: " +
                          printable(s.host->snapshot->gpu_status.empty() ? "none" : s.host->snapshot->gpu_status),
                      Style::dim);
                push(std::move(l));
            }
            for (const GpuInfo* g : s.gpus) push(gpu_line(*s.host->snapshot, *g));
            for (Line& l : findings(*s.host)) push(std::move(l));
        }
        if (i == selected) sel_to = static_cast<int>(body.size());
    }
    const int room = std::max(0, h_ - 2);
    const int total = static_cast<int>(body.size());
    int scroll = std::clamp(v_.scroll, 0, std::max(0, total - room));
    if (v_.show_selection && !shown.empty()) {
        // (a block taller than the screen: its head at the top)
        if (sel_from < scroll)
            scroll = sel_from;
        else if (sel_to - scroll > room)
            scroll = std::min(sel_from, sel_to - room);
    }
    r.scroll = scroll;
    r.visible_lines = room;
    r.frame.lines.push_back(title(shown));
    r.host_at_line.push_back(-1);
    if (shown.empty()) {
        Line l;
        l.add(hosts_.empty() ? "no hosts"
              : v_.free_only ? "no free GPU on the hosts that answer"
                             : "no host matches the filter",
              Style::dim);
        r.frame.lines.push_back(std::move(l));
        r.host_at_line.push_back(-1);
    }
    for (int i = scroll; i < total && i - scroll < room; ++i) {
        r.frame.lines.push_back(std::move(body[static_cast<std::size_t>(i)]));
        r.host_at_line.push_back(owner[static_cast<std::size_t>(i)]);
    }
    while (static_cast<int>(r.frame.lines.size()) < h_ - 1) {
        r.frame.lines.emplace_back();
        r.host_at_line.push_back(-1);
    }
    if (h_ >= 2) {
        r.frame.lines.push_back(status());
        r.host_at_line.push_back(-1);
    }
    if (static_cast<int>(r.frame.lines.size()) > h_) {
        r.frame.lines.resize(static_cast<std::size_t>(h_));
        r.host_at_line.resize(static_cast<std::size_t>(h_));
    }
    return r;
}

}  // namespace

const char* host_status_name(HostStatus s) {
    switch (s) {
        case HostStatus::waiting:
            return "waiting";
        case HostStatus::ok:
            return "ok";
        case HostStatus::stale:
            return "stale";
        case HostStatus::down:
            return "down";
        case HostStatus::unauthorized:
            return "unauthorized";
        case HostStatus::bad_answer:
            return "bad answer";
    }
    return "?";
}

bool gpu_is_free(const GpuInfo& g) {
    if (g.error || g.lost || !g.processes.empty()) return false;
    if (g.utilization_percent.value_or(0) >= 10) return false;
    const std::optional<double> mem = diagnose::gpu_memory_percent(g);
    return mem.value_or(0) < 5;
}

char host_sort_letter(HostSort k) {
    static constexpr char letters[] = {'o', 'n', 'f', 'u', 'c', 'm'};
    return letters[static_cast<int>(k)];
}

const char* host_sort_name(HostSort k) {
    static constexpr const char* names[] = {"order given", "name", "free GPUs", "GPU use", "CPU", "memory"};
    return names[static_cast<int>(k)];
}

const std::vector<HostsKeyHelp>& hosts_key_help() {
    static const std::vector<HostsKeyHelp> keys = {
        {"q", "quit"},
        {"h ?", "this help (any key closes it)"},
        {"Up Down", "select a host; PgUp PgDn Home End; the mouse: click a host, the wheel scrolls"},
        {"Enter", "the selected host's full view (its processes, graphs, keys); Esc comes back"},
        {"s", "sort the hosts: order given, name, free GPUs, GPU use, CPU, memory"},
        {"/", "filter: hosts by name, GPUs by model, user or command; empty clears it"},
        {"g", "free GPUs only, on the hosts that have one (where can I run?)"},
    };
    return keys;
}

HostsLayoutResult layout_hosts(const std::vector<HostView>& hosts, const Thresholds& t, const HostsViewState& v,
                               int width, int height) {
    return HostsLayout(hosts, t, v, width, height).build();
}

}  // namespace baton::ui
