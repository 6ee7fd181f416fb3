#include "ui/top_layout.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "ui/graph.hpp"
#include "ui/line_fit.hpp"
#include "ui/top_keys.hpp"
#include "sample/process_lookup.hpp"

namespace baton::ui {

namespace {

// Throttle reasons that matter for speed (gpu_idle is the normal state of an idle GPU, the
// clock settings are choices), how bad they are, and a short name for a one-line row.
Style throttle_style(const std::string& r) {
    if (r == "sw_power_cap" || r == "sync_boost") return Style::elevated;
    return Style::alarm;
}

bool reported_throttle(const std::string& r) {
    return r != "gpu_idle" && r != "applications_clocks_setting" && r != "display_clock_setting";
}

std::string short_throttle(const std::string& r) {
    static constexpr std::pair<const char*, const char*> names[] = {
        {"sw_power_cap", "pwr-cap"},
        {"hw_slowdown", "hw-slow"},
        {"sync_boost", "sync"},
        {"sw_thermal_slowdown", "sw-therm"},
        {"hw_thermal_slowdown", "hw-therm"},
        {"hw_power_brake_slowdown", "pwr-brake"},
    };
    for (const auto& [full, brief] : names)
        if (r == full) return brief;
    return r;
}

// GPU processes that the process table does not have: NVML reports host pids, which a
// container with its own pid namespace cannot see. They are shown anyway, since they hold
// the GPU's memory.
std::vector<ProcessInfo> unseen_gpu_processes(const Snapshot& s) {
    std::vector<ProcessInfo> out;
    if (!s.processes_collected) return out;
    for (const GpuInfo& g : s.gpus) {
        for (const GpuProcess& gp : g.processes) {
            if (gp.local_pid) continue;  // tied to a process of ours (by pid, or by its device file)
            auto ghost = std::find_if(out.begin(), out.end(), [&](const ProcessInfo& p) { return p.pid == gp.pid; });
            if (ghost == out.end()) {
                ProcessInfo p;
                p.pid = gp.pid;
                p.user = "?";
                p.name = "?";
                p.command = "(not in this pid namespace)";
                out.push_back(std::move(p));
                ghost = out.end() - 1;
            }
            if (gp.used_memory_bytes)
                ghost->gpu_memory_bytes = ghost->gpu_memory_bytes.value_or(0) + *gp.used_memory_bytes;
            if (std::find(ghost->gpu_indices.begin(), ghost->gpu_indices.end(), g.index) == ghost->gpu_indices.end())
                ghost->gpu_indices.push_back(g.index);
        }
    }
    return out;
}

class Layout {
  public:
    Layout(const TopInput& in, const ViewState& v, int width, int height)
        : in_(in), s_(*in.snapshot), v_(v), w_(width), h_(height), ghosts_(unseen_gpu_processes(s_)) {}

    LayoutResult build();

  private:
    Line header() const;
    std::vector<Line> gpus() const;
    std::vector<Line> gpu_details(const GpuInfo& g) const;
    Line cpu_total() const;
    std::vector<Line> cpu_cores(int max_rows) const;
    Line memory() const;
    Line swap() const;
    Line disks() const;
    Line networks() const;
    std::vector<Line> graphs(int budget) const;
    Line table_header(std::vector<LayoutResult::SortCell>* cells = nullptr) const;
    Line process_line(const ProcessRow& r, bool selected) const;
    Line status() const;
    std::vector<Line> help() const;
    const ProcessInfo* find_process(std::uint32_t pid) const { return baton::find_process(s_, pid); }

    const TopInput& in_;
    const Snapshot& s_;
    const ViewState& v_;
    int w_, h_;
    std::vector<ProcessInfo> ghosts_;
};

Line Layout::header() const {
    std::vector<Piece> p;
    p.push_back(text_piece(printable(s_.host.hostname), Style::title));
    if (s_.host.uptime_seconds)
        p.push_back(text_piece("up " + duration_text(*s_.host.uptime_seconds), Style::plain, 3));
    p.push_back(text_piece(fmt::format("{} CPUs", s_.host.cpu_count), Style::plain, 2));
    if (s_.processes_collected) p.push_back(text_piece(fmt::format("{} procs", s_.processes.size()), Style::plain, 4));
    if (!in_.origin.empty()) {
        p.push_back(text_piece("  " + in_.origin, in_.origin_style, 0, false));
    } else {
        std::string self = "baton";
        self += in_.self.cpu_percent ? fmt::format(" {:.1f}% CPU", *in_.self.cpu_percent) : " -% CPU";
        self += in_.self.rss_bytes ? " " + compact_bytes(static_cast<double>(*in_.self.rss_bytes)) : std::string(" -");
        p.push_back(text_piece("  " + self, Style::dim, 5, false));
    }
    if (v_.paused) p.push_back(text_piece("  PAUSED", Style::elevated, 0, false));
    return fit_pieces(std::move(p), w_, v_.ascii);
}

std::vector<Line> Layout::gpus() const {
    std::vector<Line> out;
    if (s_.gpus.empty()) {
        Line l;
        l.add("GPU", Style::title).add(" ").add(s_.gpu_status.empty() ? "none" : printable(s_.gpu_status), Style::dim);
        out.push_back(std::move(l));
        return out;
    }
    int name_width = 0;
    for (const GpuInfo& g : s_.gpus) name_width = std::max(name_width, display_width(short_gpu_name(g.name)));
    name_width = std::min(name_width, 16);
    const bool any_sm =
        std::any_of(s_.gpus.begin(), s_.gpus.end(), [](const GpuInfo& g) { return g.sm_activity_percent.has_value(); });
    for (const GpuInfo& g : s_.gpus) {
        std::vector<Piece> p;
        p.push_back(text_piece(fmt::format("GPU{}", g.index), Style::title));
        // Dropped first when the row is narrow: power, temperature, name, SM; never the flags.
        p.push_back(text_piece(pad_right(short_gpu_name(g.name), name_width), Style::plain, 4));
        if (g.error) {
            p.push_back(text_piece(printable(*g.error), Style::alarm));
            out.push_back(fit_pieces(std::move(p), w_, v_.ascii));
            continue;
        }
        const Style util_style = g.stale ? Style::dim : Style::plain;
        p.push_back(bar_piece(g.utilization_percent.value_or(0), util_style, 3, 20));
        p.push_back(text_piece(percent_text(g.utilization_percent), util_style, 0, false));
        if (any_sm) p.push_back(text_piece("SM" + percent_text(g.sm_activity_percent), util_style, 6));
        auto mem = diagnose::gpu_memory_percent(g);
        // The colour is the judgement: on a GPU in MIG mode its fullest MIG device's (a slice runs
        // out at its own size), while the bar shows the whole GPU.
        const auto judged = diagnose::judged_memory_percent(g);
        const Style mem_style =
            g.stale ? Style::dim
                    : (judged ? style_for(diagnose::gpu_memory_level(in_.thresholds, *judged)) : Style::dim);
        p.push_back(bar_piece(mem.value_or(0), mem_style, 3, 20));
        std::string mem_text = g.memory_used_bytes && g.memory_total_bytes
                                   ? compact_bytes(static_cast<double>(*g.memory_used_bytes)) + "/" +
                                         compact_bytes(static_cast<double>(*g.memory_total_bytes))
                                   : "-";
        p.push_back(text_piece(pad_left(mem_text, 9), mem_style));
        p.push_back(text_piece(g.temperature_celsius ? fmt::format("{:>3.0f}C", *g.temperature_celsius) : "  -C",
                               Style::plain, 5));
        std::string power = g.power_watts ? fmt::format("{:.0f}", *g.power_watts) : "-";
        if (g.power_limit_watts) power += fmt::format("/{:.0f}", *g.power_limit_watts);
        p.push_back(text_piece(pad_left(power + "W", 8), Style::plain, 3));
        if (g.stale) p.push_back(text_piece("STALE", Style::elevated));
        if (g.throttle_reasons) {
            std::string reasons;
            Style worst = Style::elevated;
            for (const std::string& r : *g.throttle_reasons) {
                if (!reported_throttle(r)) continue;
                reasons += (reasons.empty() ? "" : ",") + short_throttle(r);
                if (throttle_style(r) == Style::alarm) worst = Style::alarm;
            }
            if (!reasons.empty()) p.push_back(text_piece("THR " + reasons, worst, 9));
        }
        // PCIe: a narrower link than the slot allows is always worth a flag; a lower generation
        // only while the GPU works (idle GPUs drop their link speed to save power).
        if (g.pcie_generation && g.pcie_generation_max && g.pcie_width && g.pcie_width_max) {
            const bool busy = g.utilization_percent.value_or(0) >= 10;
            if (*g.pcie_width < *g.pcie_width_max || (busy && *g.pcie_generation < *g.pcie_generation_max))
                p.push_back(text_piece(fmt::format("PCIe {}x{}/{}x{}", *g.pcie_generation, *g.pcie_width,
                                                   *g.pcie_generation_max, *g.pcie_width_max),
                                       Style::elevated, 8));
        }
        out.push_back(fit_pieces(std::move(p), w_, v_.ascii));
    }
    return out;
}

// The expanded panel of one GPU: what nvidia-smi -q shows that a training user checks. A field the
// GPU or driver does not report is left out (never shown as 0).
std::vector<Line> Layout::gpu_details(const GpuInfo& g) const {
    std::vector<Line> out;
    if (g.error) return out;
    const std::string indent = "    ";
    auto mhz = [](const std::optional<unsigned>& now, const std::optional<unsigned>& max) -> std::string {
        if (!now) return "";
        return max ? fmt::format("{}/{}MHz", *now, *max) : fmt::format("{}MHz", *now);
    };
    // Clocks, fan, video engines.
    {
        std::vector<Piece> p;
        p.push_back(text_piece(indent + "clk", Style::dim, 0, false));
        if (g.sm_clock_mhz) p.push_back(text_piece("SM " + mhz(g.sm_clock_mhz, g.sm_clock_max_mhz), Style::plain, 5));
        if (g.memory_clock_mhz)
            p.push_back(text_piece("mem " + mhz(g.memory_clock_mhz, g.memory_clock_max_mhz), Style::plain, 4));
        if (g.fan_speed_percent)
            p.push_back(text_piece(fmt::format("fan {:.0f}%", *g.fan_speed_percent), Style::plain, 3));
        if (g.encoder_utilization_percent)
            p.push_back(text_piece(fmt::format("enc {:.0f}%", *g.encoder_utilization_percent), Style::plain, 2));
        if (g.decoder_utilization_percent)
            p.push_back(text_piece(fmt::format("dec {:.0f}%", *g.decoder_utilization_percent), Style::plain, 2));
        if (g.power_watts && g.power_limit_watts)
            p.push_back(
                text_piece(fmt::format("power {:.0f}/{:.0f}W", *g.power_watts, *g.power_limit_watts), Style::plain, 1));
        if (p.size() > 1) out.push_back(fit_pieces(std::move(p), w_, v_.ascii));
    }
    // Links: PCIe now against the slot's best, NVLink.
    {
        std::vector<Piece> p;
        p.push_back(text_piece(indent + "io ", Style::dim, 0, false));
        if (g.pcie_generation && g.pcie_width) {
            std::string link = fmt::format("PCIe {}x{}", *g.pcie_generation, *g.pcie_width);
            if (g.pcie_generation_max && g.pcie_width_max)
                link += fmt::format("/{}x{}", *g.pcie_generation_max, *g.pcie_width_max);
            const bool narrow = g.pcie_width_max && *g.pcie_width < *g.pcie_width_max;
            p.push_back(text_piece(link, narrow ? Style::elevated : Style::plain, 0));
        }
        if (g.pcie_rx_bytes_per_second || g.pcie_tx_bytes_per_second)
            p.push_back(text_piece(
                "rx " + rate_text(g.pcie_rx_bytes_per_second) + " tx " + rate_text(g.pcie_tx_bytes_per_second),
                Style::plain, 4));
        if (g.nvlink_links_active) {
            p.push_back(text_piece(fmt::format("NVLink {} up", *g.nvlink_links_active), Style::plain, 0));
            if (*g.nvlink_links_active > 0)
                p.push_back(text_piece(
                    "rx " + rate_text(g.nvlink_rx_bytes_per_second) + " tx " + rate_text(g.nvlink_tx_bytes_per_second),
                    Style::plain, 3));
        }
        if (g.pcie_replay_total && *g.pcie_replay_total > 0)
            p.push_back(text_piece(fmt::format("replays {}", *g.pcie_replay_total), Style::elevated, 2));
        if (p.size() > 1) out.push_back(fit_pieces(std::move(p), w_, v_.ascii));
    }
    // Memory health and modes.
    {
        std::vector<Piece> p;
        p.push_back(text_piece(indent + "mem", Style::dim, 0, false));
        if (g.ecc_uncorrected_volatile || g.ecc_corrected_volatile) {
            std::string ecc = "ECC";
            if (g.ecc_corrected_volatile) ecc += fmt::format(" corr {}", *g.ecc_corrected_volatile);
            if (g.ecc_uncorrected_volatile) ecc += fmt::format(" unc {}", *g.ecc_uncorrected_volatile);
            p.push_back(text_piece(ecc, g.ecc_uncorrected_volatile.value_or(0) > 0 ? Style::alarm : Style::plain, 0));
        }
        if (g.remapped_rows_corrected || g.remapped_rows_uncorrected) {
            std::string rows = fmt::format("rows remapped {}+{}", g.remapped_rows_corrected.value_or(0),
                                           g.remapped_rows_uncorrected.value_or(0));
            Style st = g.remapped_rows_uncorrected.value_or(0) > 0 ? Style::elevated : Style::plain;
            if (g.remapping_pending.value_or(false)) {
                rows += " reset pending";
                st = Style::elevated;
            }
            if (g.remapping_failed.value_or(false)) {
                rows += " FAILED";
                st = Style::alarm;
            }
            p.push_back(text_piece(rows, st, 0));
        }
        if (g.retired_pages)
            p.push_back(text_piece(fmt::format("retired pages {}", *g.retired_pages),
                                   *g.retired_pages > 0 ? Style::elevated : Style::plain, 0));
        if (g.persistence_mode)
            p.push_back(text_piece(*g.persistence_mode ? "persistence on" : "persistence off", Style::plain, 3));
        if (g.compute_mode)
            p.push_back(text_piece(std::string("compute ") + enum_name(*g.compute_mode), Style::plain, 2));
        if (g.mig_mode) p.push_back(text_piece(*g.mig_mode ? "MIG on" : "MIG off", Style::plain, 4));
        if (p.size() > 1) out.push_back(fit_pieces(std::move(p), w_, v_.ascii));
    }
    // MIG devices: profile, ids, memory, the processes on each.
    for (const MigInstance& m : g.mig_instances) {
        std::vector<Piece> p;
        p.push_back(text_piece(indent + "MIG", Style::dim, 0, false));
        p.push_back(text_piece(pad_right(diagnose::mig_profile(m.name), 8), Style::title));
        p.push_back(text_piece(fmt::format("GI {} CI {}", m.gpu_instance_id, m.compute_instance_id), Style::plain, 0));
        const std::optional<double> used = diagnose::mig_memory_percent(m);
        const Style mem_style = used ? style_for(diagnose::gpu_memory_level(in_.thresholds, *used)) : Style::dim;
        p.push_back(bar_piece(used.value_or(0), mem_style, 3, 12, 3));
        p.push_back(text_piece(m.memory_used_bytes && m.memory_total_bytes
                                   ? compact_bytes(static_cast<double>(*m.memory_used_bytes)) + "/" +
                                         compact_bytes(static_cast<double>(*m.memory_total_bytes))
                                   : "-",
                               mem_style, 0));
        std::string procs;
        for (std::uint32_t pid : m.pids) {
            std::string name;
            for (const GpuProcess& gp : g.processes)
                if (gp.pid == pid)
                    if (const ProcessInfo* info = find_process(gp.our_pid())) name = printable(info->name);
            procs += fmt::format(" {}{}", pid, name.empty() ? "" : "(" + name + ")");
        }
        p.push_back(text_piece(
            m.pids.empty() ? "idle" : fmt::format("{} proc{}:{}", m.pids.size(), m.pids.size() == 1 ? "" : "s", procs),
            m.pids.empty() ? Style::dim : Style::plain, 2));
        out.push_back(fit_pieces(std::move(p), w_, v_.ascii));
    }
    return out;
}

Line Layout::cpu_total() const {
    const CpuTimes& t = s_.cpu.total;
    const Style cpu_style =
        t.utilization_percent ? style_for(diagnose::cpu_level(in_.thresholds, *t.utilization_percent)) : Style::dim;
    std::vector<Piece> p;
    p.push_back(text_piece("CPU ", Style::title));
    p.push_back(bar_piece(t.utilization_percent.value_or(0), cpu_style, 3, 30));
    p.push_back(text_piece(percent_text(t.utilization_percent), cpu_style, 0, false));
    auto part = [](const char* name, std::optional<double> v) {
        return fmt::format("{} {}", name, v ? fmt::format("{:.1f}", *v) : "-");
    };
    p.push_back(text_piece(part("usr", t.user_percent), Style::plain, 4));
    p.push_back(text_piece(part("sys", t.system_percent), Style::plain, 4));
    const Style io_style =
        t.iowait_percent ? style_for(diagnose::iowait_level(in_.thresholds, *t.iowait_percent)) : Style::dim;
    p.push_back(text_piece(part("iow", t.iowait_percent), io_style, 6));
    p.push_back(text_piece(part("st", t.steal_percent), Style::plain, 2));
    p.push_back(text_piece(fmt::format("load {:.2f} {:.2f} {:.2f}", s_.cpu.load_average[0], s_.cpu.load_average[1],
                                       s_.cpu.load_average[2]),
                           Style::plain, 5));
    p.push_back(text_piece(fmt::format("run {}", s_.cpu.runnable_tasks), Style::plain, 3));
    return fit_pieces(std::move(p), w_, v_.ascii);
}

std::vector<Line> Layout::cpu_cores(int max_rows) const {
    std::vector<Line> out;
    const auto& cores = s_.cpu.cores;
    if (cores.empty() || max_rows <= 0) return out;
    const int n = static_cast<int>(cores.size());
    // A cell per core, "  3[||||   42%]", as wide as the rows allow; with too many cores for
    // that, one column per core (an eighth-block level), labelled by the first core of the row.
    for (int bar_width = 10; bar_width >= 3; --bar_width) {
        const int cell = 4 + 1 + bar_width + 4 + 1;  // id, '[', bar, pct, ']'
        const int per_row = std::max(1, (w_ + 1) / (cell + 1));
        const int rows = (n + per_row - 1) / per_row;
        if (rows > max_rows) continue;
        for (int r = 0; r < rows; ++r) {
            Line l;
            for (int c = 0; c < per_row; ++c) {
                const int i = r * per_row + c;
                if (i >= n) break;
                const CpuTimes& t = cores[static_cast<std::size_t>(i)].times;
                const Style st = t.utilization_percent
                                     ? style_for(diagnose::cpu_level(in_.thresholds, *t.utilization_percent))
                                     : Style::dim;
                if (c > 0) l.add(" ");
                l.add(pad_left(std::to_string(cores[static_cast<std::size_t>(i)].id), 4), Style::dim);
                l.add("[", Style::dim);
                l.add(bar(t.utilization_percent.value_or(0), bar_width, v_.ascii), st);
                l.add(percent_text(t.utilization_percent), st);
                l.add("]", Style::dim);
            }
            out.push_back(std::move(l));
        }
        return out;
    }
    static constexpr const char* levels[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    static constexpr const char* ascii_levels[] = {" ", ".", ".", ":", ":", "+", "+", "#", "#"};
    const int label = 5;
    const int per_row = std::max(1, w_ - label);
    for (int start = 0; start < n && static_cast<int>(out.size()) < max_rows; start += per_row) {
        Line l;
        l.add(pad_left(std::to_string(cores[static_cast<std::size_t>(start)].id), label - 1) + " ", Style::dim);
        for (int i = start; i < std::min(n, start + per_row); ++i) {
            const CpuTimes& t = cores[static_cast<std::size_t>(i)].times;
            const double u = std::clamp(t.utilization_percent.value_or(0), 0.0, 100.0);
            const int k = static_cast<int>(std::lround(u / 100.0 * 8));
            const Style st = t.utilization_percent ? style_for(diagnose::cpu_level(in_.thresholds, u)) : Style::dim;
            l.add(v_.ascii ? ascii_levels[k] : levels[k], st);
        }
        out.push_back(std::move(l));
    }
    return out;
}

Line Layout::memory() const {
    const MemoryStats& m = s_.memory;
    const double used =
        m.total_bytes ? 100.0 * static_cast<double>(m.used_bytes) / static_cast<double>(m.total_bytes) : 0;
    std::vector<Piece> p;
    p.push_back(text_piece("Mem ", Style::title));
    p.push_back(bar_piece(used, Style::plain, 3, 30));
    p.push_back(text_piece(compact_bytes(static_cast<double>(m.used_bytes)) + "/" +
                           compact_bytes(static_cast<double>(m.total_bytes))));
    p.push_back(text_piece("avail " + compact_bytes(static_cast<double>(m.available_bytes)), Style::plain, 4));
    p.push_back(text_piece("cache " + compact_bytes(static_cast<double>(m.cached_bytes)), Style::plain, 2));
    if (m.shm_total_bytes && m.shm_used_bytes)
        p.push_back(text_piece("shm " + compact_bytes(static_cast<double>(*m.shm_used_bytes)) + "/" +
                                   compact_bytes(static_cast<double>(*m.shm_total_bytes)),
                               Style::plain, 5));
    return fit_pieces(std::move(p), w_, v_.ascii);
}

Line Layout::swap() const {
    const SwapStats& sw = s_.swap;
    const double used =
        sw.total_bytes ? 100.0 * static_cast<double>(sw.used_bytes) / static_cast<double>(sw.total_bytes) : 0;
    auto traffic = diagnose::swap_traffic(sw);
    const Style st = traffic ? style_for(diagnose::swap_level(in_.thresholds, *traffic)) : Style::dim;
    std::vector<Piece> p;
    p.push_back(text_piece("Swp ", Style::title));
    p.push_back(bar_piece(used, Style::plain, 3, 30));
    p.push_back(text_piece(compact_bytes(static_cast<double>(sw.used_bytes)) + "/" +
                           compact_bytes(static_cast<double>(sw.total_bytes))));
    p.push_back(text_piece("in " + rate_text(sw.in_bytes_per_second), st, 6));
    p.push_back(text_piece("out " + rate_text(sw.out_bytes_per_second), st, 6));
    if (sw.major_faults_per_second)
        p.push_back(text_piece(fmt::format("majflt {:.0f}/s", *sw.major_faults_per_second), Style::plain, 2));
    if (s_.pressure.available) {
        auto some = [](const PressureResource& r) { return r.some ? fmt::format("{:.1f}", r.some->avg10) : "-"; };
        p.push_back(text_piece(fmt::format("PSI cpu {} mem {} io {}", some(s_.pressure.cpu), some(s_.pressure.memory),
                                           some(s_.pressure.io)),
                               Style::plain, 4));
    }
    return fit_pieces(std::move(p), w_, v_.ascii);
}

Line Layout::disks() const {
    std::vector<const DiskStats*> d;
    for (const DiskStats& x : s_.disks) d.push_back(&x);
    auto traffic = [](const DiskStats* x) {
        return x->read_bytes_per_second.value_or(0) + x->write_bytes_per_second.value_or(0);
    };
    std::stable_sort(d.begin(), d.end(), [&](const DiskStats* a, const DiskStats* b) {
        if (a->busy_percent.value_or(0) != b->busy_percent.value_or(0))
            return a->busy_percent.value_or(0) > b->busy_percent.value_or(0);
        return traffic(a) > traffic(b);
    });
    Line l;
    l.add("Dsk", Style::title);
    if (d.empty()) l.add(" none", Style::dim);
    for (const DiskStats* x : d) {
        std::string cell = fmt::format(" {} r {} w {} {}", printable(x->name), rate_text(x->read_bytes_per_second),
                                       rate_text(x->write_bytes_per_second), percent_text(x->busy_percent, 1));
        if (l.width() + display_width(cell) > w_) break;  // busiest first: the rest do not fit
        l.add(cell, x->busy_percent.value_or(0) > 80 ? Style::elevated : Style::plain);
    }
    return l;
}

Line Layout::networks() const {
    std::vector<const NetworkStats*> n;
    for (const NetworkStats& x : s_.networks) n.push_back(&x);
    auto traffic = [](const NetworkStats* x) {
        return x->rx_bytes_per_second.value_or(0) + x->tx_bytes_per_second.value_or(0);
    };
    std::stable_sort(n.begin(), n.end(),
                     [&](const NetworkStats* a, const NetworkStats* b) { return traffic(a) > traffic(b); });
    Line l;
    l.add("Net", Style::title);
    if (n.empty()) l.add(" none", Style::dim);
    for (const NetworkStats* x : n) {
        std::string cell = fmt::format(" {} rx {} tx {}", printable(x->name), rate_text(x->rx_bytes_per_second),
                                       rate_text(x->tx_bytes_per_second));
        if (x->speed_mbps)
            cell += *x->speed_mbps >= 1000 ? fmt::format(" ({}G)", *x->speed_mbps / 1000)
                                           : fmt::format(" ({}M)", *x->speed_mbps);
        if (l.width() + display_width(cell) > w_) break;
        l.add(cell);
    }
    return l;
}

// One graph of a strip: its label, the series it draws, the newest value and its style.
struct GraphCell {
    const char* label;
    GraphSeries series;
    std::optional<double> now;
    Style style;
};

// "45s", "10m": how far back the left edge of a graph reaches.
std::string span_text(double seconds) {
    return seconds < 120 ? fmt::format("{:.0f}s", seconds) : fmt::format("{:.0f}m", seconds / 60);
}

// History graphs: a strip for the host (CPU, memory), then one per GPU (utilisation, SM activity
// when GPM reports it, memory), each as high as `budget` lines allow (1 to 4). None when the
// history has fewer than two samples, when `budget` cannot give every strip a line, or when the
// frame is too narrow for graphs worth reading: graphs are the first thing a small terminal drops.
std::vector<Line> Layout::graphs(int budget) const {
    std::vector<Line> out;
    const GraphHistory* h = in_.history;
    if (!v_.graphs || !h || h->size() < 2) return out;
    std::vector<const GpuInfo*> gpus;
    for (const GpuInfo& g : s_.gpus)
        if (!g.error) gpus.push_back(&g);
    const int strips = 1 + static_cast<int>(gpus.size());
    if (budget < strips) return out;
    const int rows = std::min(4, budget / strips);
    const GraphGlyphs glyphs = v_.ascii ? GraphGlyphs::ascii : v_.graph_glyphs;
    int prefix = 5;  // "Host ", "GPU0 "; wider for GPU10 and up
    for (const GpuInfo* g : gpus) prefix = std::max(prefix, display_width(fmt::format("GPU{} ", g->index)));
    const bool any_sm =
        std::any_of(gpus.begin(), gpus.end(), [](const GpuInfo* g) { return g->sm_activity_percent.has_value(); });
    const int cells = any_sm ? 3 : 2;  // the same cell width in every strip, so the graphs line up
    const int cell = (w_ - prefix - 2 * (cells - 1)) / cells;
    const int graph_width = cell - 5 /* label */ - 5 /* value */;
    if (graph_width < 8) return out;
    const double span = graph_width * samples_per_column(glyphs) * s_.interval_seconds;

    std::vector<float> values;
    auto strip = [&](const std::string& name, const std::string& uuid, const std::vector<GraphCell>& row_cells,
                     bool first) {
        std::vector<Line> lines(static_cast<std::size_t>(rows));
        for (int r = 0; r < rows; ++r) {
            std::string label = r == 0 ? name : "";
            if (first && r == rows - 1 && rows > 1 && span > 0) label = span_text(span);
            lines[static_cast<std::size_t>(r)].add(pad_right(label, prefix), r == 0 ? Style::title : Style::dim);
        }
        for (std::size_t c = 0; c < row_cells.size(); ++c) {
            const GraphCell& gc = row_cells[c];
            h->recent(gc.series, uuid, static_cast<std::size_t>(graph_width * samples_per_column(glyphs)), values);
            const std::vector<std::string> g = graph_lines(values, 100, graph_width, rows, glyphs);
            for (int r = 0; r < rows; ++r) {
                Line& l = lines[static_cast<std::size_t>(r)];
                if (c > 0) l.add("  ");
                l.add(pad_right(r == 0 ? gc.label : "", 5), Style::dim);
                l.add(g[static_cast<std::size_t>(r)], gc.now ? gc.style : Style::dim);
                l.add(r == 0 ? pad_left(percent_text(gc.now), 5) : std::string(5, ' '), gc.style);
            }
        }
        for (Line& l : lines) out.push_back(std::move(l));
    };

    const CpuTimes& t = s_.cpu.total;
    const std::optional<double> mem_now =
        s_.memory.total_bytes ? std::optional<double>(100.0 * static_cast<double>(s_.memory.used_bytes) /
                                                      static_cast<double>(s_.memory.total_bytes))
                              : std::nullopt;
    strip("Host", "",
          {{"cpu", GraphSeries::cpu, t.utilization_percent,
            t.utilization_percent ? style_for(diagnose::cpu_level(in_.thresholds, *t.utilization_percent))
                                  : Style::plain},
           {"mem", GraphSeries::memory, mem_now, Style::plain}},
          true);
    for (const GpuInfo* g : gpus) {
        const Style util_style = g->stale ? Style::dim : Style::plain;
        const auto mem = diagnose::gpu_memory_percent(*g);
        std::vector<GraphCell> row_cells{{"util", GraphSeries::gpu_utilization, g->utilization_percent, util_style}};
        if (any_sm) row_cells.push_back({"SM", GraphSeries::gpu_sm_activity, g->sm_activity_percent, util_style});
        row_cells.push_back(
            {"mem", GraphSeries::gpu_memory, mem,
             g->stale || !mem ? Style::dim : style_for(diagnose::gpu_memory_level(in_.thresholds, *mem))});
        strip(fmt::format("GPU{}", g->index), g->uuid, row_cells, false);
    }
    return out;
}

// Process table: PID, the chosen columns (process_columns.hpp), COMMAND. The sort that each column
// header shows (the arrow) and that a click on it chooses.
constexpr int kPid = 7;

std::optional<SortKey> column_sort(Column c) {
    switch (c) {
        case Column::user:
            return SortKey::user;
        case Column::gpu_memory:
            return SortKey::gpu_memory;
        case Column::cpu:
            return SortKey::cpu;
        case Column::rss:
            return SortKey::memory;
        case Column::io:
            return SortKey::io;
        default:
            return std::nullopt;
    }
}

// "45s", "12m", "3h05", "2d4h": how long a process has run, in at most 6 columns.
std::string age_text(double seconds) {
    if (!(seconds >= 0)) return "-";
    const auto s = static_cast<long long>(seconds);
    if (s < 60) return fmt::format("{}s", s);
    if (s < 3600) return fmt::format("{}m", s / 60);
    if (s < 86400) return fmt::format("{}h{:02}", s / 3600, s % 3600 / 60);
    return fmt::format("{}d{}h", s / 86400, s % 86400 / 3600);
}

Line Layout::table_header(std::vector<LayoutResult::SortCell>* cells) const {
    std::string h;
    auto col = [&](const char* name, int width, std::optional<SortKey> key, bool left = false) {
        std::string n = name;
        if (key && v_.sort == *key) n = (v_.ascii ? "v" : "▼") + n;
        if (key && cells) {
            const int from = display_width(h);
            cells->push_back({from, from + width, *key});
        }
        return left ? pad_right(n, width) : pad_left(n, width);
    };
    h = col("PID", kPid, SortKey::pid);
    for (const ColumnSpec& c : column_specs()) {
        if (!(v_.columns & column_bit(c.column))) continue;
        h += " ";
        if (c.column == Column::io && v_.tree)
            h += pad_left("TREE%", c.width);
        else
            h += col(c.header, c.width, column_sort(c.column), c.column == Column::user);
    }
    h += " ";
    h += col("COMMAND", 7, SortKey::command, true);
    Line l;
    l.add(clip(h, w_), Style::column);
    l.fill = Style::column;
    return l;
}

Line Layout::process_line(const ProcessRow& r, bool selected) const {
    const ProcessInfo& p = *r.process;
    std::string fixed = pad_left(std::to_string(p.pid), kPid);
    for (const ColumnSpec& c : column_specs()) {
        if (!(v_.columns & column_bit(c.column))) continue;
        std::string cell;
        switch (c.column) {
            case Column::user:
                cell = pad_right(printable(p.user), c.width);
                break;
            case Column::state:
                cell = r.outside ? "-" : printable(std::string_view(&p.state, 1));
                break;
            case Column::gpu: {
                std::string gpus;
                for (unsigned g : p.gpu_indices) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
                cell = gpus.empty() ? "-" : clip(gpus, c.width);
                break;
            }
            case Column::gpu_memory:
                // "?": it holds a GPU, but NVML's memory could not be tied to it alone (several holders here).
                cell = p.gpu_memory_ambiguous
                           ? (p.gpu_memory_bytes ? compact_bytes(static_cast<double>(*p.gpu_memory_bytes)) + "?" : "?")
                       : p.gpu_memory_bytes ? compact_bytes(static_cast<double>(*p.gpu_memory_bytes))
                                            : "-";
                break;
            case Column::gpu_memory_share: {
                // Its GPU memory against the memory of the GPUs it is on.
                std::uint64_t total = 0;
                for (unsigned g : p.gpu_indices)
                    for (const GpuInfo& gi : s_.gpus)
                        if (gi.index == g) total += gi.memory_total_bytes.value_or(0);
                cell = p.gpu_memory_bytes && total > 0
                           ? fmt::format("{:.1f}",
                                         100.0 * static_cast<double>(*p.gpu_memory_bytes) / static_cast<double>(total))
                           : "-";
                break;
            }
            case Column::sm:
                cell = r.gpu_sm_percent ? fmt::format("{:.0f}", *r.gpu_sm_percent) : "-";
                break;
            case Column::cpu:
                cell = p.cpu_percent ? fmt::format("{:.1f}", *p.cpu_percent) : "-";
                break;
            case Column::rss:
                cell = r.outside ? "-" : compact_bytes(static_cast<double>(p.rss_bytes));
                break;
            case Column::io:
                if (v_.tree) {
                    cell = r.has_children ? fmt::format("{:.1f}", r.group_cpu_percent) : "";
                } else {
                    const bool known = p.read_bytes_per_second || p.write_bytes_per_second;
                    cell =
                        known
                            ? compact_bytes(p.read_bytes_per_second.value_or(0) + p.write_bytes_per_second.value_or(0))
                            : "-";
                }
                break;
            case Column::threads:
                cell = r.outside || p.threads == 0 ? "-" : std::to_string(p.threads);
                break;
            case Column::age:
                cell = r.outside || p.start_time_ms <= 0 || s_.time_unix_ms <= 0
                           ? "-"
                           : age_text(static_cast<double>(s_.time_unix_ms - p.start_time_ms) / 1000.0);
                break;
        }
        fixed += " " + (c.column == Column::user ? cell : pad_left(cell, c.width));
    }
    fixed += " ";
    Line l;
    const Style base = selected ? Style::selected : Style::plain;
    l.add(fixed, base);
    if (!r.tree_prefix.empty()) l.add(r.tree_prefix, selected ? Style::selected : Style::dim);
    l.add(printable(p.command), base);
    if (selected) l.fill = Style::selected;
    return l;
}

Line Layout::status() const {
    Line l;
    l.fill = Style::status;
    switch (v_.prompt) {
        case Prompt::filter:
            l.add("Filter: " + v_.edit + "_   (Enter applies, Esc cancels)", Style::status);
            return l;
        case Prompt::sort: {
            std::string s = "Sort by:";
            for (SortKey k : {SortKey::gpu_memory, SortKey::cpu, SortKey::memory, SortKey::pid, SortKey::io,
                              SortKey::user, SortKey::command})
                s += fmt::format(" {} {} ", sort_key_letter(k), sort_key_name(k));
            l.add(s + " (Esc cancels)", Style::status);
            return l;
        }
        case Prompt::kill: {
            std::string name;
            for (const ProcessInfo& p : s_.processes)
                if (p.pid == v_.selected_pid) name = " (" + printable(p.name) + ")";
            l.add(fmt::format("Signal {}{}? y = SIGTERM, 9 = SIGKILL, any other key cancels", v_.selected_pid, name),
                  Style::status);
            return l;
        }
        case Prompt::renice: {
            std::string name;
            if (const ProcessInfo* p = find_process(v_.selected_pid)) name = " (" + printable(p->name) + ")";
            l.add(fmt::format("Renice {}{} to: {}_   (-20 to 19, higher = less CPU; Enter applies, Esc cancels)",
                              v_.selected_pid, name, v_.edit),
                  Style::status);
            return l;
        }
        case Prompt::columns: {
            std::string s = "Columns:";
            for (const ColumnSpec& c : column_specs())
                s += fmt::format(" {} {}{}", c.letter, c.header, v_.columns & column_bit(c.column) ? "*" : "");
            l.add(s + "  (* shown; Enter closes)", Style::status);
            return l;
        }
        case Prompt::none:
            break;
    }
    if (!v_.message.empty()) {
        l.add(v_.message, Style::status);
        return l;
    }
    if (in_.breaches.empty()) {
        l.add("no threshold breached", Style::status);
    } else {
        std::string text;
        for (const diagnose::Breach& b : in_.breaches) text += (text.empty() ? "" : "  |  ") + b.text;
        l.add(text, Style::alarm);
    }
    std::string hint = "  h help  q quit";
    if (!v_.filter.empty()) hint = "  filter \"" + v_.filter + "\"" + hint;
    if (v_.gpu_only) hint = "  GPU processes" + hint;
    if (l.width() + display_width(hint) <= w_) l.add(hint, Style::status);
    return l;
}

std::vector<Line> Layout::help() const {
    std::vector<std::string> lines = {"baton top keys"};
    for (const KeyBinding& b : key_bindings()) {
        std::string keys = b.keys;
        keys.resize(std::max<std::size_t>(keys.size() + 1, 11), ' ');
        lines.push_back("  " + keys + b.help);
    }
    for (const char* t : {"Colours follow the indicator table (config [thresholds]):",
                          "  GPU memory best 60-85 %, alarm > 90 %; CPU best <= 70 %, alarm > 80 % sustained;",
                          "  swap best ~0, alarm > 1 MB/s sustained; I/O wait best <= 2 %, alarm > 5 %."})
        lines.emplace_back(t);
    std::vector<Line> out;
    for (const std::string& t : lines) {
        Line l;
        l.add(t, t[0] == ' ' ? Style::plain : Style::title);
        out.push_back(std::move(l));
    }
    return out;
}

LayoutResult Layout::build() {
    LayoutResult r;
    r.frame.width = w_;
    r.frame.height = h_;
    std::vector<Line>& out = r.frame.lines;
    const std::vector<ProcessRow> rows =
        s_.processes_collected ? process_rows(s_, v_, ghosts_) : std::vector<ProcessRow>{};
    for (const ProcessRow& row : rows) r.row_pids.push_back(row.process->pid);

    // Fixed sections first; what does not fit in a small terminal goes, least useful first:
    // the per-core grid shrinks, then disks and network, then swap.
    std::vector<Line> top;
    top.push_back(header());
    for (Line& l : gpus()) top.push_back(std::move(l));
    top.push_back(cpu_total());
    const int table_min = s_.processes_collected ? 4 : 0;  // column header and a few rows
    const int base = static_cast<int>(top.size()) + 2 /* mem, swap */ + 2 /* disk, net */ + 1 /* status */;
    const int room_for_cores = std::max(0, h_ - base - table_min);
    const int core_rows_max = std::min(room_for_cores, static_cast<int>(s_.cpu.cores.size() <= 16 ? 4 : 8));
    for (Line& l : cpu_cores(core_rows_max)) top.push_back(std::move(l));
    const int left = h_ - static_cast<int>(top.size()) - 1 - table_min;
    top.push_back(memory());
    if (left >= 2) top.push_back(swap());
    if (left >= 4) {
        top.push_back(disks());
        top.push_back(networks());
    }
    if (static_cast<int>(top.size()) > h_ - 1) top.resize(static_cast<std::size_t>(std::max(0, h_ - 1)));
    for (Line& l : top) out.push_back(std::move(l));
    // The expanded GPU panel and the graphs take what the sections left, less the table's share
    // (half of it, 8 lines at least): the panel first, under each GPU's line, when all of it fits
    // (or whatever fits when `e` asked for it), then the graphs.
    const int room = h_ - static_cast<int>(out.size()) - 1;
    const int table_share = s_.processes_collected ? std::max(8, room / 2) : 0;
    int budget = room - table_share;
    if (v_.gpu_details.value_or(true)) {
        std::vector<std::vector<Line>> details;
        int wanted = 0;
        for (const GpuInfo& g : s_.gpus) {
            details.push_back(gpu_details(g));
            wanted += static_cast<int>(details.back().size());
        }
        const bool asked = v_.gpu_details.has_value();
        int limit = asked ? room - (s_.processes_collected ? 4 : 0) : (wanted <= budget ? wanted : 0);
        // GPU i's line is out[1 + i] (after the header); insert from the last so indices hold.
        std::vector<int> take(details.size(), 0);
        int used = 0;
        for (std::size_t i = 0; i < details.size(); ++i) {
            const int n = static_cast<int>(details[i].size());
            if (used + n > limit || 1 + i >= out.size()) break;
            take[i] = n;
            used += n;
        }
        for (std::size_t i = details.size(); i-- > 0;) {
            if (!take[i]) continue;
            out.insert(out.begin() + static_cast<long>(2 + i), std::make_move_iterator(details[i].begin()),
                       std::make_move_iterator(details[i].end()));
        }
        r.gpu_details_shown = used > 0;
        budget -= used;
    }
    for (Line& l : graphs(budget)) out.push_back(std::move(l));

    const int table_rows = h_ - static_cast<int>(out.size()) - 1;  // less the status line
    if (v_.help) {
        for (Line& l : help())
            if (static_cast<int>(out.size()) < h_ - 1) out.push_back(std::move(l));
    } else if (s_.processes_collected && table_rows >= 1) {
        r.header_line = static_cast<int>(out.size());
        out.push_back(table_header(&r.sort_cells));
        const int visible = table_rows - 1;
        r.visible_rows = std::max(0, visible);
        int selected = 0;
        for (std::size_t i = 0; i < rows.size(); ++i)
            if (rows[i].process->pid == v_.selected_pid) selected = static_cast<int>(i);
        int scroll = std::clamp(v_.scroll, 0, std::max(0, static_cast<int>(rows.size()) - visible));
        if (selected < scroll) scroll = selected;
        if (visible > 0 && selected >= scroll + visible) scroll = selected - visible + 1;
        r.scroll = scroll;
        for (int i = scroll; i < std::min(static_cast<int>(rows.size()), scroll + visible); ++i)
            out.push_back(process_line(rows[static_cast<std::size_t>(i)], v_.show_selection && i == selected));
    }
    while (static_cast<int>(out.size()) < h_ - 1) out.emplace_back();
    if (h_ > 0) out.push_back(status());
    return r;
}

}  // namespace

LayoutResult layout_top(const TopInput& in, const ViewState& v, int width, int height) {
    return Layout(in, v, std::max(1, width), std::max(1, height)).build();
}

}  // namespace baton::ui
