#include "report/snapshot_text.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only): Debian ships no static libfmt

#include "core/printable.hpp"

namespace baton::report {

std::string human_bytes(double b) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (std::fabs(b) >= 1024 && u < 5) {
        b /= 1024;
        ++u;
    }
    if (u == 0) return fmt::format("{:.0f} B", b);
    if (b >= 100) return fmt::format("{:.0f} {}", b, units[u]);
    return fmt::format("{:.1f} {}", b, units[u]);
}

namespace {

template <typename T>
std::string opt(const std::optional<T>& v, const char* spec, const char* missing = "-") {
    return v ? fmt::format(fmt::runtime(spec), *v) : std::string(missing);
}

std::string opt_bytes_rate(const std::optional<double>& v) {
    return v ? human_bytes(*v) + "/s" : "-";
}

// Command lines are written by their processes: never let one send escape sequences to the
// user's terminal (core/printable.hpp); long ones are clipped at a character boundary.
std::string clipped_command(std::string_view s, std::size_t max) {
    std::string out = printable(s);
    if (out.size() <= max) return out;
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    return out.substr(0, cut) + "...";
}

}  // namespace

void append_snapshot_text(const Snapshot& s, const TextOptions& o, std::string& out) {
    auto line = [&](const std::string& l) { out.append(l).push_back('\n'); };
    line(fmt::format("{}  kernel {}  {} CPUs  up {}", s.host.hostname, s.host.kernel, s.host.cpu_count,
                     s.host.uptime_seconds ? fmt::format("{:.1f} h", *s.host.uptime_seconds / 3600) : "-"));
    const CpuTimes& t = s.cpu.total;
    line(fmt::format("CPU     {} busy (user {} system {} iowait {} steal {})  load {:.2f} {:.2f} {:.2f}  runnable {}",
                     opt(t.utilization_percent, "{:.1f}%"), opt(t.user_percent, "{:.1f}%"),
                     opt(t.system_percent, "{:.1f}%"), opt(t.iowait_percent, "{:.1f}%"),
                     opt(t.steal_percent, "{:.1f}%"), s.cpu.load_average[0], s.cpu.load_average[1],
                     s.cpu.load_average[2], s.cpu.runnable_tasks));
    const MemoryStats& m = s.memory;
    line(fmt::format("Memory  {} used of {} ({} available, {} cached, {} shared)  /dev/shm {}",
                     human_bytes(m.used_bytes), human_bytes(m.total_bytes), human_bytes(m.available_bytes),
                     human_bytes(m.cached_bytes), human_bytes(m.shared_bytes),
                     m.shm_used_bytes && m.shm_total_bytes
                         ? human_bytes(*m.shm_used_bytes) + " of " + human_bytes(*m.shm_total_bytes)
                         : std::string("-")));
    line(fmt::format("Swap    {} used of {}  in {}  out {}  major faults {}/s{}", human_bytes(s.swap.used_bytes),
                     human_bytes(s.swap.total_bytes), opt_bytes_rate(s.swap.in_bytes_per_second),
                     opt_bytes_rate(s.swap.out_bytes_per_second), opt(s.swap.major_faults_per_second, "{:.0f}"),
                     s.swap.oom_kill_total && *s.swap.oom_kill_total
                         ? fmt::format("  OOM kills since boot {}", *s.swap.oom_kill_total)
                         : std::string()));
    if (s.pressure.available) {
        auto some = [](const PressureResource& r) { return r.some ? fmt::format("{:.1f}%", r.some->avg10) : "-"; };
        line(fmt::format("Stall   cpu {}  memory {}  io {}  (some, avg10)", some(s.pressure.cpu),
                         some(s.pressure.memory), some(s.pressure.io)));
    }
    for (const DiskStats& d : s.disks)
        line(fmt::format("Disk    {:<10} read {}  write {}  busy {}  wait {}", d.name,
                         opt_bytes_rate(d.read_bytes_per_second), opt_bytes_rate(d.write_bytes_per_second),
                         opt(d.busy_percent, "{:.0f}%"), opt(d.average_wait_ms, "{:.1f} ms")));
    for (const NetworkStats& n : s.networks)
        line(fmt::format("Net     {:<10} rx {}  tx {}{}", n.name, opt_bytes_rate(n.rx_bytes_per_second),
                         opt_bytes_rate(n.tx_bytes_per_second),
                         n.speed_mbps ? fmt::format("  link {} Mb/s", *n.speed_mbps) : std::string()));
    if (s.gpus.empty())
        line("GPU     none (" + s.gpu_status + ")");
    else if (s.gpu_state != GpuState::ok)
        line("GPU     " + s.gpu_status);
    for (const GpuInfo& g : s.gpus) {
        if (g.error) {
            line(fmt::format("GPU{:<3}  {}  {}", g.index, g.name, *g.error));
            continue;
        }
        std::string throttle;
        if (g.throttle_reasons) {
            for (const auto& r : *g.throttle_reasons)
                if (r != "gpu_idle") throttle += (throttle.empty() ? "  throttled: " : ",") + r;
        }
        line(fmt::format("GPU{:<3}  {}  util {}  mem {} of {}  {}  {} / {}{}{}", g.index, g.name,
                         opt(g.utilization_percent, "{:.0f}%"),
                         g.memory_used_bytes ? human_bytes(static_cast<double>(*g.memory_used_bytes)) : "-",
                         g.memory_total_bytes ? human_bytes(static_cast<double>(*g.memory_total_bytes)) : "-",
                         opt(g.temperature_celsius, "{:.0f} C"), opt(g.power_watts, "{:.0f} W"),
                         opt(g.power_limit_watts, "{:.0f} W"), throttle, g.stale ? "  (stale)" : ""));
    }
    if (!s.processes_collected) return;
    std::vector<const ProcessInfo*> top;
    top.reserve(s.processes.size());
    for (const auto& p : s.processes) top.push_back(&p);
    std::sort(top.begin(), top.end(), [](const ProcessInfo* a, const ProcessInfo* b) {
        auto ga = a->gpu_memory_bytes.value_or(0), gb = b->gpu_memory_bytes.value_or(0);
        if (ga != gb) return ga > gb;
        double ca = a->cpu_percent.value_or(0), cb = b->cpu_percent.value_or(0);
        if (ca != cb) return ca > cb;
        return a->rss_bytes > b->rss_bytes;
    });
    top.resize(std::min(top.size(), o.top_processes));
    line(fmt::format("{} processes; top {} by GPU memory, then CPU:", s.processes.size(), top.size()));
    line(fmt::format("  {:>7} {:<10} {:>6} {:>9} {:>9}  {}", "PID", "USER", "CPU%", "RSS", "GPU MEM", "COMMAND"));
    for (const ProcessInfo* p : top) {
        std::string cmd = clipped_command(p->command, 77);
        line(fmt::format("  {:>7} {:<10} {:>6} {:>9} {:>9}  {}", p->pid, p->user.substr(0, 10),
                         opt(p->cpu_percent, "{:.1f}"), human_bytes(static_cast<double>(p->rss_bytes)),
                         p->gpu_memory_bytes ? human_bytes(static_cast<double>(*p->gpu_memory_bytes)) : "-", cmd));
    }
}

}  // namespace baton::report
