// Host rules: the CPU, swap and I/O-wait indicators, memory pressure, CPU
// oversubscription and shared memory. Thresholds: core/thresholds.hpp; docs/findings.md.
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "diagnose/host_load.hpp"
#include "diagnose/indicators.hpp"
#include "diagnose/rules.hpp"

namespace baton::diagnose {

namespace {

std::string mb(double bytes_per_second) {
    return fmt::format("{:.1f} MB/s", bytes_per_second / 1e6);
}

void cpu_load_high(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    Series s = series(
        w, [](const Snapshot& x) { return x.cpu.total.utilization_percent; },
        [&](double v) { return v > t.cpu_alarm_percent; });
    if (!sustained(s, t)) return;
    Finding f = make_finding(
        "cpu_load_high", Severity::warning, "host",
        fmt::format("CPU {:.0f} % busy on average over {:.0f} s (alarm above {:g} % sustained)", s.average, s.span(),
                    t.cpu_alarm_percent),
        fmt::format("The CPUs are the limit (best at or below {:g} %). Check the data-loading pipeline and its "
                    "buffers: heavy decoding or augmentation in DataLoader workers, too many workers for the cores, "
                    "or other jobs on the box (baton top, sorted by CPU).",
                    t.cpu_best_max_percent));
    f.evidence.push_back(evidence("cpu.utilization_percent", s, fmt::format("> {:g}", t.cpu_alarm_percent)));
    out.push_back(std::move(f));
}

void swap_rules(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    Series traffic = series(
        w, [](const Snapshot& x) { return swap_traffic(x.swap); },
        [&](double v) { return v > t.swap_alarm_bytes_per_second; });
    Series in = series(
        w, [](const Snapshot& x) { return x.swap.in_bytes_per_second; },
        [&](double v) { return v > t.swap_alarm_bytes_per_second / 2; });
    Series outs = series(
        w, [](const Snapshot& x) { return x.swap.out_bytes_per_second; },
        [&](double v) { return v > t.swap_alarm_bytes_per_second / 2; });
    const std::string fix =
        "Host memory is short: fewer DataLoader workers (each one holds its own copy of an in-memory dataset), "
        "smaller data types (uint8 images, float16 features), or load the dataset once into shared memory "
        "(numpy.memmap / torch.from_file on /dev/shm) instead of per worker.";
    if (sustained(in, t) && sustained(outs, t)) {
        // Pages going out and coming back in: the working set does not fit.
        Finding f = make_finding("swap_thrash", Severity::critical, "host",
                                 fmt::format("swapping in {} and out {} at once, sustained over {:.0f} s",
                                             mb(in.average), mb(outs.average), in.span()),
                                 fix);
        f.evidence.push_back(
            evidence("swap.in_bytes_per_second", in, fmt::format("> {:g}", t.swap_alarm_bytes_per_second / 2)));
        f.evidence.push_back(
            evidence("swap.out_bytes_per_second", outs, fmt::format("> {:g}", t.swap_alarm_bytes_per_second / 2)));
        out.push_back(std::move(f));
    }
    if (sustained(traffic, t)) {
        Finding f = make_finding("swap_active", Severity::warning, "host",
                                 fmt::format("swap traffic {} on average over {:.0f} s (alarm above {} sustained)",
                                             mb(traffic.average), traffic.span(), mb(t.swap_alarm_bytes_per_second)),
                                 "Preload the dataset, use smaller data types, or give the job more memory. " + fix);
        f.evidence.push_back(evidence("swap.in_plus_out_bytes_per_second", traffic,
                                      fmt::format("> {:g}", t.swap_alarm_bytes_per_second)));
        out.push_back(std::move(f));
    }
}

void io_wait_high(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    Series s = series(
        w, [](const Snapshot& x) { return x.cpu.total.iowait_percent; },
        [&](double v) { return v > t.iowait_alarm_percent; });
    if (s.samples == 0 || s.average <= t.iowait_alarm_percent) return;
    Finding f = make_finding(
        "io_wait_high", Severity::warning, "host",
        fmt::format("I/O wait {:.1f} % of CPU time on average (alarm above {:g} %)", s.average, t.iowait_alarm_percent),
        fmt::format("The CPUs wait for storage (best at or below {:g} %). Put the dataset on local NVMe with a RAM "
                    "buffer (page cache, or copy it to /dev/shm), read fewer and larger files (shards, WebDataset, "
                    "LMDB), and give the DataLoader more workers so reads overlap.",
                    t.iowait_best_max_percent));
    f.evidence.push_back(evidence("cpu.iowait_percent", s, fmt::format("> {:g} (average)", t.iowait_alarm_percent)));
    out.push_back(std::move(f));
}

void host_memory_pressure(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    Series s = series(
        w,
        [](const Snapshot& x) -> std::optional<double> {
            if (!x.pressure.available || !x.pressure.memory.full) return std::nullopt;
            return x.pressure.memory.full->avg10;
        },
        [&](double v) { return v > t.psi_memory_full_percent; });
    if (!sustained(s, t)) return;
    Finding f = make_finding(
        "host_memory_pressure", Severity::warning, "host",
        fmt::format("every task stalled on memory {:.1f} % of the time (PSI memory full avg10; alarm above {:g} %)",
                    s.average, t.psi_memory_full_percent),
        "The kernel spends its time reclaiming memory. Fewer DataLoader workers, smaller data types, or load the "
        "dataset once into shared memory instead of once per worker.");
    f.evidence.push_back(evidence("pressure.memory.full.avg10", s, fmt::format("> {:g}", t.psi_memory_full_percent)));
    out.push_back(std::move(f));
}

void cpu_oversubscribed(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    Series s = series(
        w,
        [&](const Snapshot& x) -> std::optional<double> {
            if (x.host.cpu_count == 0) return std::nullopt;
            return static_cast<double>(x.cpu.runnable_tasks) / static_cast<double>(x.host.cpu_count);
        },
        [&](double v) { return v > t.runnable_per_core; });
    if (!sustained(s, t)) return;
    const unsigned cores = w.back().host.cpu_count;
    Finding f = make_finding(
        "cpu_oversubscribed", Severity::warning, "host",
        fmt::format("{:.1f} runnable tasks per core on average ({} cores; alarm above {:g} sustained)", s.average,
                    cores, t.runnable_per_core),
        "More threads want to run than there are cores, so they take turns. A common cause: every DataLoader worker "
        "and every process starts its own OpenMP/MKL thread pool of one thread per core. Set OMP_NUM_THREADS (and "
        "MKL_NUM_THREADS) per process to the cores it should use, and torch.set_num_threads in workers.");
    f.snippet =
        fmt::format("export OMP_NUM_THREADS={}  # cores / training processes on this box", std::max(1u, cores / 2));
    f.evidence.push_back(evidence("cpu.runnable_tasks_per_core", s, fmt::format("> {:g}", t.runnable_per_core)));
    out.push_back(std::move(f));
}

void shm_low(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    const Snapshot& last = w.back();
    const MemoryStats& m = last.memory;
    if (!m.shm_total_bytes || !m.shm_used_bytes || *m.shm_total_bytes == 0) return;
    const double used = 100.0 * static_cast<double>(*m.shm_used_bytes) / static_cast<double>(*m.shm_total_bytes);
    // Small /dev/shm matters when DataLoader workers exist: a trainer with child processes.
    bool workers = false;
    for (const GpuInfo& g : last.gpus)
        for (const GpuProcess& gp : g.processes)
            for (const ProcessInfo& p : last.processes)
                if (p.ppid == gp.our_pid()) workers = true;
    const bool full = used > t.shm_used_percent;
    const bool small = workers && static_cast<double>(*m.shm_total_bytes) < t.shm_min_bytes;
    if (!full && !small) return;
    Finding f = make_finding(
        "shm_low", full ? Severity::critical : Severity::warning, "host",
        full ? fmt::format("/dev/shm is {:.0f} % full ({:.0f} MiB of {:.0f} MiB)", used,
                           static_cast<double>(*m.shm_used_bytes) / 1048576.0,
                           static_cast<double>(*m.shm_total_bytes) / 1048576.0)
             : fmt::format("/dev/shm is only {:.0f} MiB while DataLoader workers run",
                           static_cast<double>(*m.shm_total_bytes) / 1048576.0),
        "DataLoader workers hand batches to the trainer through shared memory; when it runs out they die with "
        "\"bus error\" or \"No space left on device\". In Docker, start the container with --ipc=host or "
        "--shm-size=16g (the default is 64 MB); elsewhere remount /dev/shm larger.");
    f.snippet = "docker run --ipc=host ...   # or: docker run --shm-size=16g ...";
    Evidence e;
    e.metric = "memory.shm_used_percent";
    e.average = e.minimum = e.maximum = used;
    e.threshold = fmt::format("> {:g} or total < {:g} bytes", t.shm_used_percent, t.shm_min_bytes);
    e.samples = 1;
    f.evidence.push_back(e);
    out.push_back(std::move(f));
}

// Names the processes (and users) behind a host-wide load at the end of its summary: on a shared
// box the load may be anyone's.
void name_the_load(const Window& w, Finding& f) {
    const std::optional<LoadKind> kind = load_kind_of_rule(f.rule);
    if (!kind) return;
    const std::string who = load_text(load_by_process(w, *kind), *kind);
    if (!who.empty()) {
        f.summary += (*kind == LoadKind::memory ? "; most memory held by " : "; most of it from ") + who;
    } else if (*kind == LoadKind::io && !w.back().processes.empty()) {
        f.summary += "; whose reads and writes these are needs root to see (/proc/PID/io)";
    }
}

}  // namespace

void host_rules(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    const std::size_t first = out.size();
    cpu_load_high(w, t, out);
    swap_rules(w, t, out);
    io_wait_high(w, t, out);
    host_memory_pressure(w, t, out);
    cpu_oversubscribed(w, t, out);
    for (std::size_t i = first; i < out.size(); ++i) name_the_load(w, out[i]);
    shm_low(w, t, out);
    disk_space_low(w, t, out);
}

}  // namespace baton::diagnose
