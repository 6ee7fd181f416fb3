#include "sample/linux/system_reader.hpp"

#include <algorithm>
#include <dirent.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/text_parse.hpp"
#include "sample/linux/pressure.hpp"

namespace baton::os {

namespace {

// Counters can go backwards (a device re-registered, a counter wrapped on 32-bit fields):
// such a delta is dropped rather than reported as a huge rate.
std::optional<double> rate(std::uint64_t before, std::uint64_t after, double dt) {
    if (dt <= 0 || after < before) return std::nullopt;
    return static_cast<double>(after - before) / dt;
}

std::string trimmed(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
    return std::string(s);
}

}  // namespace

CpuSeconds cpu_seconds(const CpuTicks& t, double hz) {
    auto sec = [&](std::uint64_t ticks) { return static_cast<double>(ticks) / hz; };
    return {sec(t.user),   sec(t.nice), sec(t.system),  sec(t.idle),
            sec(t.iowait), sec(t.irq),  sec(t.softirq), sec(t.steal)};
}

CpuTimes cpu_times_between(const CpuTicks& a, const CpuTicks& b) {
    CpuTimes t;
    if (b.total() <= a.total()) return t;
    double total = static_cast<double>(b.total() - a.total());
    auto pct = [&](std::uint64_t x0, std::uint64_t x1) {
        return x1 >= x0 ? 100.0 * static_cast<double>(x1 - x0) / total : 0.0;
    };
    t.user_percent = pct(a.user + a.nice, b.user + b.nice);
    t.system_percent = pct(a.system + a.irq + a.softirq, b.system + b.irq + b.softirq);
    t.iowait_percent = pct(a.iowait, b.iowait);
    t.steal_percent = pct(a.steal, b.steal);
    t.idle_percent = pct(a.idle, b.idle);
    t.utilization_percent = std::clamp(100.0 - *t.idle_percent - *t.iowait_percent, 0.0, 100.0);
    return t;
}

SystemReader::SystemReader(Roots roots) : roots_(std::move(roots)), powercap_(roots_.sys) {
    if (const long hz = sysconf(_SC_CLK_TCK); hz > 0) hz_ = static_cast<double>(hz);
    const std::string& p = roots_.proc;
    stat_.open(p + "/stat");
    meminfo_.open(p + "/meminfo");
    vmstat_.open(p + "/vmstat");
    loadavg_.open(p + "/loadavg");
    uptime_.open(p + "/uptime");
    diskstats_.open(p + "/diskstats");
    netdev_.open(p + "/net/dev");
    psi_cpu_.open(p + "/pressure/cpu");
    psi_memory_.open(p + "/pressure/memory");
    psi_io_.open(p + "/pressure/io");
    // Host name and kernel release do not change while we run; read them from the proc root
    // so that fixture trees control them too.
    if (read_file(p + "/sys/kernel/hostname", buf_)) hostname_ = trimmed(buf_);
    if (read_file(p + "/sys/kernel/osrelease", buf_)) kernel_ = trimmed(buf_);
}

void SystemReader::read(double now, Snapshot& snap) {
    double dt = last_time_ < 0 ? 0 : now - last_time_;
    read_host(snap);
    read_cpu(dt, snap);
    snap.cpu.package_energy_joules_total = powercap_.read();
    read_memory(dt, snap);
    read_pressure(snap);
    read_disks(dt, snap);
    read_networks(now, dt, snap);
    last_time_ = now;
}

void SystemReader::read_host(Snapshot& snap) {
    snap.host.hostname = hostname_;
    snap.host.kernel = kernel_;
    if (uptime_.read_all(buf_)) {
        std::string_view s = buf_;
        if (auto up = text::take_double(s)) snap.host.uptime_seconds = *up;
    }
}

void SystemReader::read_cpu(double dt, Snapshot& snap) {
    CpuStats& cpu = snap.cpu;
    if (loadavg_.read_all(buf_)) {
        std::string_view s = buf_;
        for (double& l : cpu.load_average) l = text::take_double(s).value_or(0);
        tasks_.reset();
        if (auto slash = s.find('/'); slash != std::string_view::npos) {
            s.remove_prefix(slash + 1);
            tasks_ = text::take_u64(s);
        }
    } else {
        tasks_.reset();
    }
    forks_.reset();
    cpu.seconds_total.reset();
    cpu.context_switches_total.reset();
    if (!stat_.read_all(buf_) || !parse_proc_stat(buf_, stat_now_)) return;
    if (stat_now_.boot_time_seconds) boot_time_ = *stat_now_.boot_time_seconds;
    forks_ = stat_now_.forks;
    snap.host.cpu_count = static_cast<unsigned>(stat_now_.cores.size());
    cpu.runnable_tasks = stat_now_.procs_running;
    cpu.blocked_tasks = stat_now_.procs_blocked;
    const bool have_prev = dt > 0;
    if (have_prev) {
        cpu.total = cpu_times_between(stat_prev_.total, stat_now_.total);
        if (stat_prev_.context_switches && stat_now_.context_switches)
            cpu.context_switches_per_second = rate(*stat_prev_.context_switches, *stat_now_.context_switches, dt);
    }
    cpu.seconds_total = cpu_seconds(stat_now_.total, hz_);
    cpu.context_switches_total = stat_now_.context_switches;
    cpu.cores.clear();
    for (const auto& [id, ticks] : stat_now_.cores) {
        CpuCore core;
        core.id = id;
        core.seconds_total = cpu_seconds(ticks, hz_);
        if (have_prev) {
            // Cores can go offline between readings: match by id, not by position.
            for (const auto& [pid, pticks] : stat_prev_.cores)
                if (pid == id) core.times = cpu_times_between(pticks, ticks);
        }
        cpu.cores.push_back(core);
    }
    std::swap(stat_prev_, stat_now_);
}

void SystemReader::read_memory(double dt, Snapshot& snap) {
    MemInfo mi;
    if (meminfo_.read_all(buf_) && parse_meminfo(buf_, mi)) {
        MemoryStats& m = snap.memory;
        m.total_bytes = mi.total;
        m.free_bytes = mi.free;
        // Kernels before 3.14 lack MemAvailable: approximate it the way free(1) did.
        m.available_bytes = mi.available.value_or(mi.free + mi.buffers + mi.cached);
        m.used_bytes = mi.total > m.available_bytes ? mi.total - m.available_bytes : 0;
        m.cached_bytes = mi.cached + mi.sreclaimable;
        m.buffers_bytes = mi.buffers;
        m.shared_bytes = mi.shmem;
        snap.swap.total_bytes = mi.swap_total;
        snap.swap.used_bytes = mi.swap_total > mi.swap_free ? mi.swap_total - mi.swap_free : 0;
    }
    struct statvfs sv {};
    if (!roots_.shm.empty() && statvfs(roots_.shm.c_str(), &sv) == 0) {
        std::uint64_t frag = sv.f_frsize ? sv.f_frsize : sv.f_bsize;
        snap.memory.shm_total_bytes = static_cast<std::uint64_t>(sv.f_blocks) * frag;
        snap.memory.shm_used_bytes = static_cast<std::uint64_t>(sv.f_blocks - sv.f_bfree) * frag;
    }
    VmStat vm;
    reclaim_.reset();
    snap.swap.in_bytes_total.reset();
    snap.swap.out_bytes_total.reset();
    snap.swap.major_faults_total.reset();
    if (!vmstat_.read_all(buf_)) return;
    parse_vmstat(buf_, vm);
    reclaim_ = vm.reclaim_activity;
    snap.swap.oom_kill_total = vm.oom_kill;
    const auto page_size = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    if (vm.pswpin) snap.swap.in_bytes_total = *vm.pswpin * page_size;
    if (vm.pswpout) snap.swap.out_bytes_total = *vm.pswpout * page_size;
    snap.swap.major_faults_total = vm.pgmajfault;
    if (dt > 0) {
        const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
        auto page_rate = [&](const auto& a, const auto& b) -> std::optional<double> {
            if (!a || !b) return std::nullopt;
            auto r = rate(*a, *b, dt);
            if (r) *r *= page;
            return r;
        };
        snap.swap.in_bytes_per_second = page_rate(vm_prev_.pswpin, vm.pswpin);
        snap.swap.out_bytes_per_second = page_rate(vm_prev_.pswpout, vm.pswpout);
        if (vm_prev_.pgmajfault && vm.pgmajfault)
            snap.swap.major_faults_per_second = rate(*vm_prev_.pgmajfault, *vm.pgmajfault, dt);
    }
    vm_prev_ = vm;
}

void SystemReader::read_pressure(Snapshot& snap) {
    PressureStats& ps = snap.pressure;
    ps.available = false;
    KeptFile* files[] = {&psi_cpu_, &psi_memory_, &psi_io_};
    PressureResource* slots[] = {&ps.cpu, &ps.memory, &ps.io};
    for (int i = 0; i < 3; ++i) {
        // Reading a PSI file fails with EOPNOTSUPP when the kernel was booted with psi=0.
        if (files[i]->read_all(buf_) && parse_pressure(buf_, *slots[i])) ps.available = true;
    }
}

bool SystemReader::is_whole_disk(std::string_view name) {
    // Whole devices are the entries of /sys/block; partitions live below them. sysfs spells
    // '/' in a device name (cciss/c0d0) as '!'.
    std::string path = roots_.sys + "/block/";
    for (char c : name) path.push_back(c == '/' ? '!' : c);
    return access(path.c_str(), F_OK) == 0;
}

bool SystemReader::is_stacked_disk(std::string_view name) {
    std::string path = roots_.sys + "/block/";
    for (char c : name) path.push_back(c == '/' ? '!' : c);
    if (access((path + "/loop").c_str(), F_OK) == 0) return true;  // a loop device: its file is on another disk
    DIR* slaves = opendir((path + "/slaves").c_str());
    if (!slaves) return false;
    bool any = false;
    while (const dirent* e = readdir(slaves))
        if (e->d_name[0] != '.') any = true;
    closedir(slaves);
    return any;
}

void SystemReader::read_disks(double dt, Snapshot& snap) {
    snap.disks.clear();
    if (!diskstats_.read_all(buf_)) return;
    parse_diskstats(buf_, disk_now_);
    std::vector<PrevDisk> next;
    next.reserve(disk_now_.size());
    for (const DiskCounters& d : disk_now_) {
        const PrevDisk* prev = nullptr;
        for (const auto& p : disk_prev_)
            if (p.name == d.name) prev = &p;
        // Both read once per device: a device's place in the stack does not change while it exists.
        const bool whole = prev ? prev->whole : is_whole_disk(d.name);
        const bool stacked = prev ? prev->stacked : whole && is_stacked_disk(d.name);
        next.push_back(PrevDisk{std::string(d.name), d, whole, stacked});
        next.back().c.name = {};  // it pointed into buf_, which the next read overwrites
        // Partitions are folded into their disk (the kernel already counts their I/O there);
        // RAM disks and never-used loop devices are noise.
        if (!whole) continue;
        if (d.name.substr(0, 3) == "ram") continue;
        if (d.name.substr(0, 4) == "loop" && d.reads + d.writes == 0) continue;
        DiskStats out;
        out.name = std::string(d.name);
        out.stacked = stacked;
        out.read_bytes_total = d.sectors_read * 512;
        out.written_bytes_total = d.sectors_written * 512;
        out.reads_total = d.reads;
        out.writes_total = d.writes;
        out.io_time_seconds_total = static_cast<double>(d.io_ticks_ms) / 1000.0;
        if (prev && dt > 0) {
            const DiskCounters& a = prev->c;
            auto rr = rate(a.sectors_read, d.sectors_read, dt);
            auto wr = rate(a.sectors_written, d.sectors_written, dt);
            if (rr) out.read_bytes_per_second = *rr * 512;
            if (wr) out.write_bytes_per_second = *wr * 512;
            out.reads_per_second = rate(a.reads, d.reads, dt);
            out.writes_per_second = rate(a.writes, d.writes, dt);
            if (auto busy = rate(a.io_ticks_ms, d.io_ticks_ms, dt)) out.busy_percent = std::min(100.0, *busy / 10.0);
            if (d.reads + d.writes >= a.reads + a.writes && d.read_ms + d.write_ms >= a.read_ms + a.write_ms) {
                std::uint64_t ios = (d.reads + d.writes) - (a.reads + a.writes);
                std::uint64_t ms = (d.read_ms + d.write_ms) - (a.read_ms + a.write_ms);
                out.average_wait_ms = ios ? static_cast<double>(ms) / static_cast<double>(ios) : 0.0;
            }
        }
        snap.disks.push_back(std::move(out));
    }
    disk_prev_ = std::move(next);
}

void SystemReader::read_networks(double now, double dt, Snapshot& snap) {
    snap.networks.clear();
    if (!netdev_.read_all(buf_)) return;
    parse_net_dev(buf_, net_now_);
    std::vector<PrevNet> next;
    next.reserve(net_now_.size());
    for (const NetCounters& n : net_now_) {
        PrevNet entry{std::string(n.name), n, std::nullopt, -1e9};
        entry.c.name = {};  // it pointed into buf_, which the next read overwrites
        const PrevNet* prev = nullptr;
        for (const auto& p : net_prev_)
            if (p.name == n.name) prev = &p;
        if (prev) {
            entry.speed_mbps = prev->speed_mbps;
            entry.speed_read_at = prev->speed_read_at;
        }
        // Link speed changes only on renegotiation: re-read it every 10 s, not every tick.
        if (now - entry.speed_read_at >= 10.0) {
            entry.speed_read_at = now;
            entry.speed_mbps.reset();
            // Reading "speed" of a link that is down fails with EINVAL; virtual links say -1.
            if (read_file(roots_.sys + "/class/net/" + entry.name + "/speed", speed_buf_)) {
                std::string_view s = speed_buf_;
                if (auto v = text::take_i64(s); v && *v > 0) entry.speed_mbps = static_cast<std::uint64_t>(*v);
            }
        }
        NetworkStats out;
        out.name = entry.name;
        out.speed_mbps = entry.speed_mbps;
        out.rx_bytes_total = n.rx_bytes;
        out.tx_bytes_total = n.tx_bytes;
        if (prev && dt > 0) {
            out.rx_bytes_per_second = rate(prev->c.rx_bytes, n.rx_bytes, dt);
            out.tx_bytes_per_second = rate(prev->c.tx_bytes, n.tx_bytes, dt);
        }
        snap.networks.push_back(std::move(out));
        next.push_back(std::move(entry));
    }
    net_prev_ = std::move(next);
}

}  // namespace baton::os
