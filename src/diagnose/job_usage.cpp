#include "diagnose/job_usage.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/enum_names.hpp"
#include "core/units.hpp"
#include "diagnose/process_trees.hpp"
#include "diagnose/series.hpp"
#include "sample/process_lookup.hpp"

namespace baton::diagnose {

namespace {

// A GPU counts as used when its mean utilisation reached this (a GPU held but never computed on
// reads 0; a data-loading pause still leaves a busy GPU well above it).
constexpr double kGpuUsedPercent = 1;
constexpr double kGpuLowPercent = 50;          // mean utilisation under this: the GPU mostly waited
constexpr double kGpuMemorySmallShare = 0.25;  // peak GPU memory under this share: a smaller GPU fits
constexpr double kCpuLowShare = 0.5;           // cores used on average under this share of those allocated
constexpr double kMemoryLowShare = 0.5;        // peak memory under this share of the allocation
constexpr double kTimeLowShare = 0.25;         // runtime under this share of the limit
constexpr double kMinimumRuntime = 300;        // shorter jobs get no advice on cores, memory or time

std::string runtime_text(double seconds) {
    if (seconds < 3600) return fmt::format("{:.0f} min", seconds / 60);
    if (seconds < 48 * 3600) return fmt::format("{:.1f} h", seconds / 3600);
    return fmt::format("{:.1f} days", seconds / 86400);
}

// Memory to ask for: the peak with a fifth more, rounded up to whole GiB.
std::uint64_t memory_request_gib(std::uint64_t peak) {
    return static_cast<std::uint64_t>(std::ceil(static_cast<double>(peak) * 1.2 / kBytesPerGiB));
}

}  // namespace

double JobUse::runtime_seconds() const {
    std::int64_t first = 0, last = 0;
    for (const NodeUse& n : nodes) {
        if (first == 0 || n.first_unix_ms < first) first = n.first_unix_ms;
        last = std::max(last, n.last_unix_ms);
    }
    if (nodes.empty()) return 0;
    double start = static_cast<double>(first) / 1000;
    // Slurm's start when it is earlier (the agent began watching after the job began), not later.
    if (start_time_unix && static_cast<double>(*start_time_unix) < start) start = static_cast<double>(*start_time_unix);
    return std::max(0.0, static_cast<double>(last) / 1000 - start);
}

void JobUsageTracker::account(const Snapshot& s, const JobInfo& j, const std::string& kind,
                              std::optional<std::int64_t> start_ms) {
    const std::int64_t now = s.time_unix_ms;
    auto [it, fresh] = jobs_.try_emplace(j.label);
    Acc& a = it->second;
    JobUse& u = a.job;
    NodeUse& n = a.node;
    if (fresh) {
        u.label = j.label;
        u.kind = kind;
        u.id = j.id;
        n.host = s.host.hostname;
        n.first_unix_ms = now;
    }
    // The time since the last sample counts when the job was in that one too, and it was recent.
    // A new job, from its start when it began after the last sample (its CPU time counts from there).
    const std::int64_t since = fresh ? (start_ms && last_tick_ms_ ? std::max(*start_ms, last_tick_ms_) : now)
                                     : (n.last_unix_ms == last_tick_ms_ ? n.last_unix_ms : now);
    double dt = 0;
    if (now > since && now - since <= kMaxSampleGapMs) dt = static_cast<double>(now - since) / 1000;
    u.ended = false;
    // Names as the job table has them now (scontrol's answer may come a few samples late).
    for (auto [to, from] : {std::pair{&u.name, &j.name}, std::pair{&u.user, &j.user}, std::pair{&u.account, &j.account},
                            std::pair{&u.partition, &j.partition}})
        if (!from->empty()) *to = *from;
    if (j.time_limit_seconds) u.time_limit_seconds = j.time_limit_seconds;
    if (j.start_time_unix) u.start_time_unix = j.start_time_unix;
    n.last_unix_ms = now;
    ++n.samples;
    if (j.allocated_cpus) n.cpus = j.allocated_cpus;
    if (j.allocated_memory_bytes) n.memory_allocated_bytes = j.allocated_memory_bytes;
    n.node_cpus = static_cast<unsigned>(s.cpu.cores.size());
    n.node_memory_bytes = s.memory.total_bytes;
    n.seconds += dt;
    n.gpu_seconds += dt * static_cast<double>(j.allocated_gpus.empty() ? j.gpus.size() : j.allocated_gpus.size());
    if (j.allocated_cpus) n.cpu_seconds_allocated += dt * *j.allocated_cpus;

    // CPU time and memory of its processes. A process that started while the job was watched
    // counts from its start; one the agent found already running (the agent started mid-job)
    // counts from when it was found.
    for (auto& [key, p] : a.processes) p.seen = false;
    // Started since the job was first seen (or since Slurm started it): all its CPU time is the job's.
    std::int64_t watched_from = n.first_unix_ms - 2000;
    if (u.start_time_unix) watched_from = std::min(watched_from, *u.start_time_unix * 1000);
    std::uint64_t rss = 0;
    for (std::uint32_t pid : j.pids) {
        const ProcessInfo* p = find_process(s, pid);
        if (!p) continue;
        rss += p->rss_bytes;
        auto [pit, new_process] = a.processes.try_emplace({pid, p->start_ticks});
        if (new_process) pit->second.base = p->start_time_ms >= watched_from ? 0 : p->cpu_seconds_total;
        pit->second.last = std::max(pit->second.last, p->cpu_seconds_total);
        pit->second.seen = true;
    }
    for (auto pit = a.processes.begin(); pit != a.processes.end();) {
        if (pit->second.seen) {
            ++pit;
            continue;
        }
        a.ended_cpu_seconds += std::max(0.0, pit->second.last - pit->second.base);
        pit = a.processes.erase(pit);
    }
    double cpu = a.ended_cpu_seconds;
    for (const auto& [key, p] : a.processes) cpu += std::max(0.0, p.last - p.base);
    n.cpu_seconds = cpu;
    n.memory_peak_bytes = std::max(n.memory_peak_bytes, rss);

    // Its GPUs: those allocated to it and those its processes use.
    std::vector<unsigned> indices = j.allocated_gpus;
    for (unsigned g : j.gpus)
        if (std::find(indices.begin(), indices.end(), g) == indices.end()) indices.push_back(g);
    for (unsigned index : indices) {
        const GpuInfo* g = gpu_at(s, index);
        if (!g) continue;
        GpuAcc& ga = a.gpus[index];
        ga.use.index = index;
        ga.use.uuid = g->uuid;
        ga.use.minor_number = g->minor_number;
        ga.use.allocated = ga.use.allocated ||
                           std::find(j.allocated_gpus.begin(), j.allocated_gpus.end(), index) != j.allocated_gpus.end();
        if (g->memory_total_bytes) ga.use.memory_total_bytes = *g->memory_total_bytes;
        if (g->lost || g->stale) continue;
        ga.use.seconds += dt;
        if (g->utilization_percent) {
            ga.util_sum += *g->utilization_percent;
            ++ga.util_n;
            ga.use.busy_seconds += dt * *g->utilization_percent / 100;
        }
        if (g->sm_activity_percent) {
            ga.sm_sum += *g->sm_activity_percent;
            ++ga.sm_n;
            ga.use.sm_seconds += dt;
            ga.use.sm_busy_seconds += dt * *g->sm_activity_percent / 100;
        }
        // The GPU's memory when it is the job's alone (allocated, or no other process on it),
        // else what the job's own processes hold there.
        std::uint64_t mine = 0;
        bool others = false;
        for (const GpuProcess& gp : g->processes) {
            const std::uint32_t pid = gp.our_pid();
            if (std::binary_search(j.pids.begin(), j.pids.end(), pid))
                mine += gp.used_memory_bytes.value_or(0);
            else
                others = true;
        }
        const std::uint64_t used = (ga.use.allocated || !others) && g->memory_used_bytes ? *g->memory_used_bytes : mine;
        ga.use.memory_peak_bytes = std::max(ga.use.memory_peak_bytes, used);
    }
    n.gpus.clear();
    for (const auto& [index, ga] : a.gpus) {
        GpuUse g = ga.use;
        if (ga.util_n) g.utilization_percent = ga.util_sum / static_cast<double>(ga.util_n);
        if (ga.sm_n) g.sm_activity_percent = ga.sm_sum / static_cast<double>(ga.sm_n);
        n.gpus.push_back(std::move(g));
    }
}

void JobUsageTracker::update(const Snapshot& s, const std::vector<Finding>& findings,
                             const std::vector<OtherJob>& others) {
    const std::int64_t now = s.time_unix_ms;
    std::set<std::string> present;
    // The other jobs' processes, out of the cgroup jobs that hold them too (OtherJob says which).
    std::set<std::uint32_t> taken;
    for (const OtherJob& o : others) taken.insert(o.info.pids.begin(), o.info.pids.end());
    struct Work {
        JobInfo job;
        std::string kind;
        std::optional<std::int64_t> start_ms;
    };
    std::vector<Work> work;                 // each job once, with its kind
    std::map<std::string, std::size_t> at;  // by label
    for (const JobInfo& j : s.jobs) {
        if (j.label.empty()) continue;
        const bool keeps_all = j.kind == JobKind::slurm || j.kind == JobKind::pod;
        if (keeps_all || std::none_of(j.pids.begin(), j.pids.end(), [&](std::uint32_t p) { return taken.count(p); })) {
            at[j.label] = work.size();
            work.push_back({j, std::string(enum_name(j.kind)), std::nullopt});
            continue;
        }
        JobInfo rest = j;
        rest.pids.clear();
        rest.gpus.clear();
        for (std::uint32_t pid : j.pids) {
            if (taken.count(pid)) continue;
            rest.pids.push_back(pid);
            if (const ProcessInfo* p = find_process(s, pid))
                for (unsigned g : p->gpu_indices)
                    if (std::find(rest.gpus.begin(), rest.gpus.end(), g) == rest.gpus.end()) rest.gpus.push_back(g);
        }
        std::sort(rest.gpus.begin(), rest.gpus.end());
        // What is left of a session or service counts only while it holds a GPU of its own.
        if (rest.pids.empty() || (j.kind != JobKind::container && rest.gpus.empty())) continue;
        at[j.label] = work.size();
        work.push_back({std::move(rest), std::string(enum_name(j.kind)), std::nullopt});
    }
    // Processes that hold a GPU in no job the cgroups name (a container that hides its cgroup path,
    // a box without systemd sessions): their owner's, as "user:NAME", with their descendants.
    std::map<std::string, std::vector<std::uint32_t>> holders;
    for (const ProcessInfo& p : s.processes)
        if (!p.gpu_indices.empty() && p.job.kind == JobKind::none && !taken.count(p.pid))
            holders[p.user.empty() ? std::to_string(p.uid) : p.user].push_back(p.pid);
    for (const auto& [user, roots] : holders) {
        const std::string label = "user:" + user;
        auto [it, fresh] = at.try_emplace(label, work.size());
        if (fresh) {
            JobInfo j;
            j.kind = JobKind::user;
            j.label = label;
            j.user = user;
            if (const ProcessInfo* p = find_process(s, roots.front())) j.id = std::to_string(p->uid);
            work.push_back({std::move(j), "user", std::nullopt});
        }
        JobInfo& j = work[it->second].job;
        for (const ProcessInfo* p : process_trees(s, roots)) {
            if (p->job.kind != JobKind::none || taken.count(p->pid)) continue;
            if (!std::binary_search(j.pids.begin(), j.pids.end(), p->pid))
                j.pids.insert(std::upper_bound(j.pids.begin(), j.pids.end(), p->pid), p->pid);
            for (unsigned g : p->gpu_indices)
                if (!std::binary_search(j.gpus.begin(), j.gpus.end(), g))
                    j.gpus.insert(std::upper_bound(j.gpus.begin(), j.gpus.end(), g), g);
        }
    }
    for (const OtherJob& o : others)
        if (!o.info.label.empty() && !at.count(o.info.label)) {
            at[o.info.label] = work.size();
            work.push_back({o.info, o.kind, o.start_ms});
        }
    for (const Work& w : work) {
        present.insert(w.job.label);
        std::optional<std::int64_t> start = w.start_ms;
        if (!start && w.job.start_time_unix) start = *w.job.start_time_unix * 1000;
        account(s, w.job, w.kind, start);
    }
    // The findings that name a job, each (rule, severity) once, with its first words.
    for (const Finding& f : findings) {
        auto it = jobs_.find(f.job);
        if (f.job.empty() || it == jobs_.end()) continue;
        if (!it->second.rules.insert({f.rule, f.severity}).second) continue;
        it->second.job.findings.push_back({f.rule, f.severity, f.summary, now});
    }
    // Jobs that left: kept keep_seconds (at most max_ended_ of them, the oldest dropped first).
    std::vector<std::pair<std::int64_t, std::string>> ended;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
        Acc& a = it->second;
        if (!present.count(it->first)) {
            if (!a.job.ended) {
                // Its processes are gone: their last readings are its CPU time.
                for (const auto& [key, p] : a.processes) a.ended_cpu_seconds += std::max(0.0, p.last - p.base);
                a.processes.clear();
                a.node.cpu_seconds = a.ended_cpu_seconds;
                ++endings_;
            }
            a.job.ended = true;
            if (static_cast<double>(now - a.node.last_unix_ms) / 1000 > keep_seconds_) {
                it = jobs_.erase(it);
                continue;
            }
            ended.emplace_back(a.node.last_unix_ms, it->first);
        }
        ++it;
    }
    if (ended.size() > max_ended_) {
        std::sort(ended.begin(), ended.end());
        for (std::size_t i = 0; i < ended.size() - max_ended_; ++i) jobs_.erase(ended[i].second);
    }
    last_tick_ms_ = now;
}

JobUse JobUsageTracker::use_of(const Acc& a) const {
    JobUse u = a.job;
    u.nodes = {a.node};
    return u;
}

std::optional<JobUse> JobUsageTracker::find(const std::string& job) const {
    // A label is exact; a bare id is first a Slurm job's (user 1000 and Slurm job 1000 share "1000").
    if (auto it = jobs_.find(job); it != jobs_.end()) return use_of(it->second);
    if (auto it = jobs_.find("slurm:" + job); it != jobs_.end()) return use_of(it->second);
    for (const auto& [label, a] : jobs_)
        if (a.job.id == job) return use_of(a);
    return std::nullopt;
}

std::vector<JobUse> JobUsageTracker::all() const {
    std::vector<JobUse> out;
    for (const auto& [label, a] : jobs_) out.push_back(use_of(a));
    return out;
}

JobUse merge_nodes(std::vector<JobUse> parts) {
    if (parts.empty()) return {};
    JobUse out = std::move(parts.front());
    for (std::size_t i = 1; i < parts.size(); ++i) {
        JobUse& p = parts[i];
        for (auto [to, from] : {std::pair{&out.name, &p.name}, std::pair{&out.user, &p.user},
                                std::pair{&out.account, &p.account}, std::pair{&out.partition, &p.partition}})
            if (to->empty()) *to = *from;
        if (!out.time_limit_seconds) out.time_limit_seconds = p.time_limit_seconds;
        if (!out.start_time_unix) out.start_time_unix = p.start_time_unix;
        out.ended = out.ended && p.ended;
        for (NodeUse& n : p.nodes) out.nodes.push_back(std::move(n));
        for (JobFindingSeen& f : p.findings)
            if (std::none_of(out.findings.begin(), out.findings.end(),
                             [&](const JobFindingSeen& o) { return o.rule == f.rule && o.severity == f.severity; }))
                out.findings.push_back(std::move(f));
    }
    std::sort(out.nodes.begin(), out.nodes.end(), [](const NodeUse& a, const NodeUse& b) { return a.host < b.host; });
    return out;
}

std::vector<std::string> job_use_notes(const JobUse& j) {
    std::vector<std::string> notes;
    unsigned allocated = 0, used = 0, judged = 0;
    double util_sum = 0;
    std::uint64_t gpu_peak = 0, gpu_total = 0;
    bool all_small = true;
    for (const NodeUse& n : j.nodes)
        for (const GpuUse& g : n.gpus) {
            allocated += g.allocated ? 1 : 0;
            if (!g.utilization_percent) continue;
            ++judged;
            if (*g.utilization_percent < kGpuUsedPercent) continue;
            ++used;
            util_sum += *g.utilization_percent;
            if (g.memory_total_bytes) {
                gpu_peak = std::max(gpu_peak, g.memory_peak_bytes);
                gpu_total = std::max(gpu_total, g.memory_total_bytes);
                all_small &= static_cast<double>(g.memory_peak_bytes) <
                             kGpuMemorySmallShare * static_cast<double>(g.memory_total_bytes);
            }
        }
    if (allocated && judged) {
        if (used == 0)
            notes.push_back(
                fmt::format("asked for {} GPU{} and used none: run it without GPUs, or find why they stayed "
                            "idle (baton diagnose while it runs)",
                            allocated, allocated == 1 ? "" : "s"));
        else if (used < allocated)
            notes.push_back(fmt::format("asked for {} GPUs, used {}: request {}", allocated, used, used));
    }
    if (used) {
        const double mean = util_sum / used;
        if (mean < kGpuLowPercent)
            notes.push_back(
                fmt::format("GPU utilisation averaged {:.0f} % on the GPU{} it used: the GPU{} mostly "
                            "waited (baton run says on what)",
                            mean, used == 1 ? "" : "s", used == 1 ? "" : "s"));
        if (gpu_total && all_small)
            notes.push_back(fmt::format("GPU memory peaked at {:.0f} % ({} of {}): a smaller GPU or a MIG slice fits",
                                        100.0 * static_cast<double>(gpu_peak) / static_cast<double>(gpu_total),
                                        format_gib(static_cast<double>(gpu_peak)),
                                        format_gib(static_cast<double>(gpu_total), 0)));
    }
    const double runtime = j.runtime_seconds();
    if (runtime < kMinimumRuntime) return notes;
    double cpu_seconds = 0;
    unsigned cores = 0;
    std::uint64_t mem_peak = 0, mem_allocated = 0;
    bool cores_known = true, memory_known = true;
    for (const NodeUse& n : j.nodes) {
        cpu_seconds += n.cpu_seconds;
        cores_known &= n.cpus.has_value();
        cores += n.cpus.value_or(0);
        memory_known &= n.memory_allocated_bytes.has_value();
        mem_peak = std::max(mem_peak, n.memory_peak_bytes);
        mem_allocated = std::max(mem_allocated, n.memory_allocated_bytes.value_or(0));
    }
    if (cores_known && cores > 1) {
        const double mean = cpu_seconds / runtime;
        if (mean < kCpuLowShare * cores) {
            const unsigned ask = std::max(1u, static_cast<unsigned>(std::ceil(mean * 1.5)));
            if (ask < cores)
                notes.push_back(fmt::format("used {:.1f} of {} cores on average ({:.0f} %): request {}", mean, cores,
                                            100.0 * mean / cores, ask));
        }
    }
    if (memory_known && mem_allocated &&
        static_cast<double>(mem_peak) < kMemoryLowShare * static_cast<double>(mem_allocated)) {
        const std::uint64_t ask = std::max<std::uint64_t>(1, memory_request_gib(mem_peak));
        if (static_cast<double>(ask) * kBytesPerGiB < static_cast<double>(mem_allocated))
            notes.push_back(
                fmt::format("memory peaked at {} of {} ({:.0f} %): request {}G per node",
                            format_gib(static_cast<double>(mem_peak)), format_gib(static_cast<double>(mem_allocated)),
                            100.0 * static_cast<double>(mem_peak) / static_cast<double>(mem_allocated), ask));
    }
    if (j.ended && j.time_limit_seconds && *j.time_limit_seconds > 0 && runtime < kTimeLowShare * *j.time_limit_seconds)
        notes.push_back(fmt::format("ran {} of a {} limit: a limit nearer the need starts sooner (backfill)",
                                    runtime_text(runtime), runtime_text(*j.time_limit_seconds)));
    return notes;
}

}  // namespace baton::diagnose
