// GPU rules: memory (high, near OOM, underused, leaking), idle holders, contention, throttling,
// PCIe link, hardware errors. Thresholds: core/thresholds.hpp; docs/findings.md.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "diagnose/indicators.hpp"
#include "core/units.hpp"
#include "diagnose/process_trees.hpp"
#include "diagnose/rules.hpp"
#include "sample/gpu/throttle_reasons.hpp"
#include "sample/process_lookup.hpp"

namespace baton::diagnose {

namespace {

std::string gib(double bytes) {
    return format_gib(bytes);
}

std::string subject(unsigned index) {
    return fmt::format("gpu:{}", index);
}

Series gpu_series(const Window& w, unsigned index, std::optional<double> (*value)(const GpuInfo&),
                  const std::function<bool(double)>& breach) {
    return series(
        w,
        [&](const Snapshot& s) -> std::optional<double> {
            const GpuInfo* g = gpu_at(s, index);
            return g ? value(*g) : std::nullopt;
        },
        breach);
}

std::optional<double> utilization(const GpuInfo& g) {
    return g.utilization_percent;
}

constexpr const char* kMemorySnippet =
    "scaler = torch.cuda.amp.GradScaler()\n"
    "with torch.autocast(device_type=\"cuda\", dtype=torch.float16):\n"
    "    loss = model(inputs).loss\n"
    "scaler.scale(loss).backward()\n"
    "scaler.step(optimizer)\n"
    "scaler.update()\n"
    "# and against fragmentation: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";

constexpr const char* kMemoryFix =
    "Mixed precision (torch.autocast with a GradScaler) cuts activation memory by about 40 %; a smaller batch "
    "with gradient accumulation keeps the effective batch; activation checkpointing "
    "(torch.utils.checkpoint) trades compute for memory; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
    "reduces fragmentation.";

// One memory subject's percent in a snapshot (memory_subjects: the GPU, or one of its MIG devices),
// without building the subjects again for every snapshot of the window.
std::optional<double> subject_percent(const Snapshot& s, unsigned index, const MemorySubject& m) {
    const GpuInfo* g = gpu_at(s, index);
    if (!g) return std::nullopt;
    const bool mig = g->mig_mode.value_or(false) && !g->mig_instances.empty();
    if (!m.gpu_instance) return mig ? std::nullopt : gpu_memory_percent(*g);
    for (const MigInstance& x : g->mig_instances)
        if (x.gpu_instance_id == *m.gpu_instance) return mig_memory_percent(x);
    return std::nullopt;
}

// Least-squares slope of a memory subject's percent over time, in percent per second.
double memory_slope(const Window& w, unsigned index, const MemorySubject& subject) {
    double n = 0, st = 0, sv = 0, stt = 0, stv = 0;
    const double t0 = w.empty() ? 0 : seconds(w.front());
    for (const Snapshot& s : w) {
        auto v = subject_percent(s, index, subject);
        if (!v) continue;
        const double t = seconds(s) - t0;
        n += 1;
        st += t;
        sv += *v;
        stt += t * t;
        stv += t * *v;
    }
    const double d = n * stt - st * st;
    return n >= 3 && d > 0 ? (n * stv - st * sv) / d : 0;
}

// gpu_memory_high and gpu_memory_near_oom for one memory subject: a GPU, or a MIG device of one.
void memory_limit_rules(const Window& w, const Thresholds& t, unsigned index, const MemorySubject& m,
                        std::vector<Finding>& out, Series& mem) {
    mem = series(
        w, [&](const Snapshot& s) { return subject_percent(s, index, m); },
        [&](double v) { return v > t.gpu_memory_alarm_percent; });
    if (mem.samples == 0) return;
    if (mem.maximum > t.gpu_memory_alarm_percent) {
        Finding f = make_finding(
            "gpu_memory_high", Severity::warning, m.subject,
            fmt::format("{} memory peaked at {:.0f} % (alarm above {:g} %; best {:g}-{:g} %)", m.label, mem.maximum,
                        t.gpu_memory_alarm_percent, t.gpu_memory_best_min_percent, t.gpu_memory_best_max_percent),
            "Use a smaller batch_size or turn on mixed precision. " + std::string(kMemoryFix));
        f.evidence.push_back(
            evidence("gpu.memory_used_percent", mem, fmt::format("> {:g}", t.gpu_memory_alarm_percent)));
        out.push_back(std::move(f));
    }
    const double slope = memory_slope(w, index, m);  // percent per second
    const double minutes_to_full = slope > 0 ? (100.0 - mem.last) / slope / 60.0 : -1;
    const bool critical = mem.maximum > t.gpu_memory_near_oom_percent;
    const bool rising = slope > 0 && mem.last > t.gpu_memory_best_max_percent && minutes_to_full >= 0 &&
                        minutes_to_full <= t.oom_horizon_minutes;
    if (critical || rising) {
        Finding f = make_finding(
            "gpu_memory_near_oom", critical ? Severity::critical : Severity::warning, m.subject,
            critical ? fmt::format("{} memory reached {:.0f} % (above {:g} %): the next larger batch or sequence "
                                   "runs out of memory",
                                   m.label, mem.maximum, t.gpu_memory_near_oom_percent)
                     : fmt::format("{} memory at {:.0f} % and rising {:.2f} points a minute: full in about {:.0f} "
                                   "minutes",
                                   m.label, mem.last, slope * 60, minutes_to_full),
            kMemoryFix);
        f.snippet = kMemorySnippet;
        f.evidence.push_back(
            evidence("gpu.memory_used_percent", mem, fmt::format("> {:g}", t.gpu_memory_near_oom_percent)));
        out.push_back(std::move(f));
    }
}

void memory_rules(const Window& w, const Thresholds& t, unsigned index, std::vector<Finding>& out) {
    // The subjects this GPU had over the window: itself, or its MIG devices (a process on a slice runs
    // out at the slice's size; the whole GPU's share says nothing of it).
    std::vector<MemorySubject> subjects;
    for (const Snapshot& s : w)
        if (const GpuInfo* g = gpu_at(s, index))
            for (MemorySubject& m : memory_subjects(*g))
                if (std::none_of(subjects.begin(), subjects.end(),
                                 [&](const MemorySubject& x) { return x.subject == m.subject; }))
                    subjects.push_back(std::move(m));
    Series mem;
    bool whole_gpu = false;
    for (const MemorySubject& m : subjects) {
        Series one;
        memory_limit_rules(w, t, index, m, out, one);
        if (!m.gpu_instance) {
            mem = one;
            whole_gpu = true;
        }
    }
    // "Room to grow" is the whole GPU's (NVML gives no utilisation per MIG device).
    if (!whole_gpu || mem.samples == 0) return;
    Series util = gpu_series(w, index, utilization, [&](double v) { return v > t.gpu_busy_percent; });
    if (util.samples && util.average > t.gpu_busy_percent && mem.maximum < t.gpu_memory_best_min_percent) {
        Finding f = make_finding(
            "gpu_underused", Severity::info, subject(index),
            fmt::format("GPU{} is busy ({:.0f} %) but uses only {:.0f} % of its memory (best {:g}-{:g} %)", index,
                        util.average, mem.maximum, t.gpu_memory_best_min_percent, t.gpu_memory_best_max_percent),
            "The batch can grow: a larger batch_size (with the learning rate scaled to match) uses the memory and "
            "usually raises throughput; or run a second experiment on this GPU.");
        f.evidence.push_back(evidence("gpu.utilization_percent", util, fmt::format("> {:g}", t.gpu_busy_percent)));
        f.evidence.push_back(
            evidence("gpu.memory_used_percent", mem, fmt::format("< {:g}", t.gpu_memory_best_min_percent)));
        out.push_back(std::move(f));
    }
}

void gpu_idle_held(const Window& w, const Thresholds& t, unsigned index, std::vector<Finding>& out) {
    Series util = gpu_series(w, index, utilization, [&](double v) { return v <= t.gpu_idle_percent; });
    if (util.samples == 0 || util.maximum > t.gpu_idle_percent) return;
    const Snapshot& last = w.back();
    const GpuInfo* g = gpu_at(last, index);
    if (!g) return;
    for (const GpuProcess& gp : g->processes) {
        if (gp.used_memory_bytes.value_or(0) == 0) continue;
        const ProcessInfo* p = find_process(last, gp.our_pid());
        if (!p) continue;
        const double age_minutes = (static_cast<double>(last.time_unix_ms - p->start_time_ms)) / 60000.0;
        if (age_minutes < t.idle_held_minutes) continue;
        // A holder that works on the CPU while its GPU does a little work is a slow trainer
        // (input_bound's business); one whose GPU does nothing at all (a notebook kernel running
        // pandas) keeps the memory from everyone else: said, not excused.
        Series cpu = series(
            w,
            [&](const Snapshot& s) -> std::optional<double> {
                const ProcessInfo* q = find_process(s, gp.our_pid());
                return q ? q->cpu_percent : std::nullopt;
            },
            [&](double v) { return v > t.gpu_idle_percent; });
        const bool cpu_busy = cpu.samples && cpu.average > t.gpu_idle_percent;
        if (cpu_busy && gpu_is_fed(w, index, t)) continue;
        Finding f = make_finding(
            "gpu_idle_held", Severity::warning, fmt::format("pid:{}", gp.our_pid()),
            fmt::format("pid {} ({}, user {}, started {:.0f} minutes ago) holds {} on GPU{}, which stayed idle "
                        "(at most {:.0f} %) for the whole window{}",
                        gp.our_pid(), p->name, p->user, age_minutes, gib(static_cast<double>(*gp.used_memory_bytes)),
                        index, util.maximum,
                        cpu_busy ? fmt::format(" while the process works on the CPU ({:.0f} % of a core)", cpu.average)
                                 : std::string()),
            "A forgotten notebook kernel or an orphaned worker keeps GPU memory that other jobs could use. If it is "
            "not needed, end it (baton top, select it, k); in a notebook, free with del model; "
            "torch.cuda.empty_cache(), or restart the kernel.");
        f.snippet = fmt::format("kill {}   # after checking it is really abandoned", gp.our_pid());
        f.evidence.push_back(evidence("gpu.utilization_percent", util, fmt::format("<= {:g}", t.gpu_idle_percent)));
        if (cpu_busy) f.evidence.push_back(evidence("process.cpu_percent", cpu, "(informative)"));
        out.push_back(std::move(f));
    }
}

void gpu_contention(const Window& w, const Thresholds& t, unsigned index, std::vector<Finding>& out) {
    const Snapshot& last = w.back();
    const GpuInfo* g = gpu_at(last, index);
    if (!g || g->utilization_percent.value_or(0) < t.gpu_active_percent) return;
    std::vector<std::uint32_t> computing;
    for (const GpuProcess& gp : g->processes) {
        if (gp.type != GpuProcessType::compute) continue;
        if (gp.sm_utilization_percent && *gp.sm_utilization_percent <= 0) continue;  // holds memory, does not compute
        computing.push_back(gp.our_pid());
    }
    // Only processes this pid namespace can see: NVML's host pids from other containers might be
    // one job, and a false alarm is worse than a missed one here.
    std::set<std::uint32_t> jobs;
    for (std::uint32_t pid : computing)
        if (find_process(last, pid)) jobs.insert(job_root(last, pid));
    if (jobs.size() < 2) return;
    std::string who;
    for (std::uint32_t pid : computing) {
        const ProcessInfo* p = find_process(last, pid);
        who += fmt::format("{}{} ({})", who.empty() ? "" : ", ", pid, p ? p->user + " " + p->name : std::string("?"));
    }
    Finding f = make_finding(
        "gpu_contention", Severity::warning, subject(index),
        fmt::format("{} separate jobs compute on GPU{} at once: {}", jobs.size(), index, who),
        "Jobs that share a GPU take turns on it and each runs slower than alone (and can run each other out of "
        "memory). Give each job its own GPU with CUDA_VISIBLE_DEVICES, or queue them.");
    f.snippet = "CUDA_VISIBLE_DEVICES=1 python train.py   # one job per GPU";
    out.push_back(std::move(f));
}

void gpu_throttled(const Window& w, const Thresholds& t, unsigned index, std::vector<Finding>& out) {
    std::size_t active = 0, throttled = 0;
    std::set<std::string> reasons;
    double temperature = 0;
    for (const Snapshot& s : w) {
        const GpuInfo* g = gpu_at(s, index);
        if (!g || g->utilization_percent.value_or(0) < t.gpu_active_percent) continue;
        ++active;
        bool any = false;
        if (g->throttle_reasons)
            for (const std::string& r : *g->throttle_reasons)
                if (throttle_reason_slows(r)) {
                    reasons.insert(r);
                    any = true;
                }
        throttled += any ? 1 : 0;
        temperature = std::max(temperature, g->temperature_celsius.value_or(0));
    }
    if (active < 2 || static_cast<double>(throttled) < t.sustained_share * static_cast<double>(active)) return;
    std::string list;
    for (const std::string& r : reasons) list += (list.empty() ? "" : ", ") + r;
    const bool thermal = reasons.count("hw_thermal_slowdown") || reasons.count("sw_thermal_slowdown");
    Finding f = make_finding(
        "gpu_throttled", Severity::warning, subject(index),
        fmt::format("GPU{} ran with lowered clocks in {} of {} busy samples ({}; up to {:.0f} C)", index, throttled,
                    active, list, temperature),
        thermal ? "The GPU is too hot: check the fans and the airflow of the chassis, the inlet temperature, and "
                  "that no cable or neighbour blocks the card."
                : "The GPU is held at its power limit: check the limit (nvidia-smi -q -d POWER) against the card's "
                  "default, and the power supply; hardware slowdown can also mean a failing power brake signal.");
    Evidence e;
    e.metric = "gpu.throttle_reasons";
    e.samples = active;
    e.breach_share = static_cast<double>(throttled) / static_cast<double>(active);
    e.threshold = "any of sw_power_cap, hw_slowdown, sw/hw_thermal_slowdown, hw_power_brake_slowdown while busy";
    f.evidence.push_back(e);
    out.push_back(std::move(f));
}

void pcie_degraded(const Window& w, const Thresholds& t, unsigned index, std::vector<Finding>& out) {
    std::size_t active = 0, degraded = 0;
    std::string link;
    for (const Snapshot& s : w) {
        const GpuInfo* g = gpu_at(s, index);
        if (!g || g->utilization_percent.value_or(0) < t.gpu_active_percent) continue;
        if (!g->pcie_generation || !g->pcie_generation_max || !g->pcie_width || !g->pcie_width_max) continue;
        ++active;
        if (*g->pcie_generation < *g->pcie_generation_max || *g->pcie_width < *g->pcie_width_max) {
            ++degraded;
            link = fmt::format("gen{} x{} of gen{} x{}", *g->pcie_generation, *g->pcie_width, *g->pcie_generation_max,
                               *g->pcie_width_max);
        }
    }
    if (active == 0 || static_cast<double>(degraded) < t.sustained_share * static_cast<double>(active)) return;
    Finding f = make_finding(
        "pcie_degraded", Severity::warning, subject(index),
        fmt::format("GPU{}'s PCIe link runs at {} while the GPU works", index, link),
        "Host-to-GPU copies run slower than the slot allows. Reseat the card or move it to a full x16 slot, check "
        "riser cables, and the BIOS PCIe settings (a forced lower generation).");
    Evidence e;
    e.metric = "gpu.pcie_link";
    e.samples = active;
    e.breach_share = static_cast<double>(degraded) / static_cast<double>(active);
    e.threshold = "generation or width below the maximum while busy";
    f.evidence.push_back(e);
    out.push_back(std::move(f));
}

void gpu_hardware_errors(const Window& w, unsigned index, std::vector<Finding>& out) {
    Series ecc = series(
        w,
        [&](const Snapshot& s) -> std::optional<double> {
            const GpuInfo* g = gpu_at(s, index);
            if (!g || !g->ecc_uncorrected_volatile) return std::nullopt;
            return static_cast<double>(*g->ecc_uncorrected_volatile);
        },
        [](double v) { return v > 0; });
    if (ecc.samples == 0 || ecc.last <= 0) return;
    Finding f = make_finding(
        "gpu_hardware_errors", Severity::critical, subject(index),
        fmt::format("GPU{} reports {:.0f} uncorrectable ECC errors since the driver loaded{}", index, ecc.last,
                    ecc.last > ecc.first ? fmt::format(" ({:.0f} new in this window)", ecc.last - ecc.first) : ""),
        "Uncorrectable memory errors corrupt results and crash jobs. Drain the GPU, reset it "
        "(nvidia-smi -r -i N) so pages are retired, run the vendor diagnostics (dcgmi diag -r 3), and replace "
        "the card if errors return.");
    f.evidence.push_back(evidence("gpu.ecc_uncorrected_volatile", ecc, "> 0"));
    out.push_back(std::move(f));
}

void gpu_memory_leak(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    // Per process: GPU memory summed over its GPUs, at each snapshot where it is listed, and the
    // span of time it was listed.
    std::map<std::uint32_t, std::vector<double>> used;
    std::map<std::uint32_t, std::pair<double, double>> seen;  // first and last time, seconds (series.hpp)
    for (const Snapshot& s : w) {
        std::map<std::uint32_t, double> now;
        for (const GpuInfo& g : s.gpus)
            for (const GpuProcess& gp : g.processes)
                if (gp.used_memory_bytes) now[gp.our_pid()] += static_cast<double>(*gp.used_memory_bytes);
        for (const auto& [pid, bytes] : now) {
            used[pid].push_back(bytes);
            auto [it, fresh] = seen.try_emplace(pid, seconds(s), seconds(s));
            if (!fresh) it->second.second = seconds(s);
        }
    }
    for (const auto& [pid, v] : used) {
        if (v.size() < 3) continue;
        // Watched long enough: a process that appeared within the window is starting up (its CUDA
        // context, then its first steps), which always grows; seen twice on an H200.
        const double watched_s = seen[pid].second - seen[pid].first;
        if (watched_s < t.sustained_share * t.window_seconds) continue;
        const double growth = v.back() - v.front();
        if (growth < t.gpu_memory_leak_bytes) continue;
        std::size_t rises = 0;
        for (std::size_t i = 1; i < v.size(); ++i) rises += v[i] >= v[i - 1] ? 1 : 0;
        // Steady: it (almost) never gave memory back.
        if (static_cast<double>(rises) < t.sustained_share * static_cast<double>(v.size() - 1)) continue;
        // And still growing: each half of the window holds at least a quarter of the growth. A trainer's
        // start-up (CUDA context, then the first step's activations and cuDNN workspaces) is one or two
        // steps followed by a plateau; seen on an H200 (docs/device-runs/), it is not a leak.
        const double middle = v[v.size() / 2];
        if (middle - v.front() < growth / 4 || v.back() - middle < growth / 4) continue;
        const ProcessInfo* p = find_process(w.back(), pid);
        Finding f = make_finding(
            "gpu_memory_leak", Severity::warning, fmt::format("pid:{}", pid),
            fmt::format("pid {}{} grew its GPU memory from {} to {} over the window and never gave it back", pid,
                        p ? " (" + p->name + ")" : std::string(), gib(v.front()), gib(v.back())),
            "Memory that only grows usually means tensors kept alive across steps: a loss accumulated without "
            ".item() (total_loss += loss keeps every graph), outputs appended to a list, or a growing cache. "
            "torch.cuda.memory_summary() and torch.cuda.memory._record_memory_history() show what holds it.");
        f.snippet = "total_loss += loss.item()   # not: total_loss += loss";
        Evidence e;
        e.metric = "process.gpu_memory_bytes";
        e.samples = v.size();
        e.minimum = *std::min_element(v.begin(), v.end());
        e.maximum = *std::max_element(v.begin(), v.end());
        e.average = (v.front() + v.back()) / 2;
        e.threshold =
            fmt::format("growth > {:g} bytes, rising in {:g} of steps", t.gpu_memory_leak_bytes, t.sustained_share);
        f.evidence.push_back(e);
        out.push_back(std::move(f));
    }
}

}  // namespace

// A GPU that NVML reports lost (GPU_IS_LOST: fallen off the bus, Xid 79) in the newest snapshot.
// Every other rule skips it (it has no values), so without this one a dead GPU would be silent.
void gpu_lost(const Window& w, unsigned index, std::vector<Finding>& out) {
    const Snapshot& last = w.back();
    auto it = std::find_if(last.gpus.begin(), last.gpus.end(), [&](const GpuInfo& g) { return g.index == index; });
    if (it == last.gpus.end() || !it->lost) return;
    // Since when, within the window: the first snapshot of the unbroken run of lost readings.
    std::size_t lost_samples = 0;
    for (auto s = w.rbegin(); s != w.rend(); ++s) {
        auto g = std::find_if(s->gpus.begin(), s->gpus.end(), [&](const GpuInfo& x) { return x.index == index; });
        if (g == s->gpus.end() || !g->lost) break;
        ++lost_samples;
    }
    Finding f = make_finding(
        "gpu_lost", Severity::critical, subject(index),
        fmt::format("GPU{} ({}, {}, {}) is lost: NVML answers \"{}\"; it fell off the bus and gives no values", index,
                    it->name, it->uuid, it->pci_bus_id, it->error.value_or("GPU is lost")),
        "The jobs on this GPU have failed or hang, and it stays unusable until it is reset. Check the kernel log for "
        "Xid 79 (fallen off the bus) and the Xid before it; with no process left on the GPU, reset it "
        "(nvidia-smi -r), else reboot. If it happens again: power delivery, cooling, the PCIe riser or slot; "
        "collect nvidia-bug-report.sh for the vendor.");
    f.snippet = fmt::format("sudo dmesg -T | grep -i xid\nsudo nvidia-smi -r -i {}   # with no process on it", index);
    Evidence e;
    e.metric = "gpu.lost";
    e.threshold = "GPU_IS_LOST";
    e.breach_share = static_cast<double>(lost_samples) / static_cast<double>(w.size());
    e.samples = w.size();
    f.evidence.push_back(e);
    out.push_back(std::move(f));
}

void gpu_rules(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    for (unsigned index : gpu_indices(w)) {
        gpu_lost(w, index, out);
        memory_rules(w, t, index, out);
        gpu_idle_held(w, t, index, out);
        gpu_contention(w, t, index, out);
        gpu_throttled(w, t, index, out);
        pcie_degraded(w, t, index, out);
        gpu_hardware_errors(w, index, out);
        gpu_xid(w, index, out);
    }
    gpu_memory_leak(w, t, out);
}

}  // namespace baton::diagnose
