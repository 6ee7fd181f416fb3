#include "queue/scheduler.hpp"

#include <algorithm>
#include <ctime>
#include <set>
#include <tuple>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/units.hpp"

namespace baton::queue {

namespace {

std::string gib(double bytes) {
    return format_gib(bytes, bytes < 10.0 * 1073741824.0 ? 1 : 0);
}

bool wants_gpus(const Resources& r) {
    return r.gpus > 0 || !r.gpu_uuids.empty();
}

// Shares a GPU only with a size to pack by: a sharing job of unknown size is placed alone.
bool sharing(const Resources& r) {
    return r.share && r.gpu_memory_bytes.has_value();
}

// Who uses each GPU, and what is reserved for the head job.
struct GpuUse {
    std::vector<std::int64_t> alone;    // jobs holding it exclusively
    std::vector<std::int64_t> sharers;  // sharing jobs on it
    std::uint64_t shared_bytes = 0;     // their reservations summed
    std::optional<std::int64_t> kept_for;
};

class Machine {
  public:
    explicit Machine(const Pool& pool) : pool_(pool), use_(pool.gpus.size()) {}

    void hold(std::int64_t job, const Resources& want, const std::vector<std::string>& gpus,
              const std::vector<unsigned>& cpus) {
        for (const std::string& uuid : gpus) {
            const int i = gpu_at(uuid);
            if (i < 0) continue;  // a GPU gone from the pool (lost): nothing to count
            GpuUse& u = use_[static_cast<std::size_t>(i)];
            if (sharing(want)) {
                u.sharers.push_back(job);
                u.shared_bytes += *want.gpu_memory_bytes;
            } else {
                u.alone.push_back(job);
            }
        }
        used_cpus_.insert(cpus.begin(), cpus.end());
        used_memory_ += want.memory_bytes;
    }

    // The pool index of this UUID, or -1.
    int gpu_at(const std::string& uuid) const {
        for (std::size_t i = 0; i < pool_.gpus.size(); ++i)
            if (pool_.gpus[i].uuid == uuid) return static_cast<int>(i);
        return -1;
    }

    // Memory a sharing job may still take on GPU i.
    double share_room(std::size_t i) const {
        const PoolGpu& g = pool_.gpus[i];
        const double cap = static_cast<double>(g.memory_total_bytes) * (1 - pool_.share_margin_percent / 100);
        return cap - static_cast<double>(std::max(g.memory_used_bytes, use_[i].shared_bytes));
    }

    // Why job `id` cannot have GPU i now, or "" when it can.
    std::string gpu_refusal(std::size_t i, std::int64_t id, const Resources& want) const {
        const PoolGpu& g = pool_.gpus[i];
        const GpuUse& u = use_[i];
        if (u.kept_for && *u.kept_for != id)
            return fmt::format("GPU{} is kept for job {} (first in line)", g.index, *u.kept_for);
        if (!u.alone.empty()) return fmt::format("GPU{} held by job {}", g.index, u.alone.front());
        if (!g.foreign.empty())
            return fmt::format("GPU{} has a foreign process pid {} ({})", g.index, g.foreign.front().pid,
                               g.foreign.front().user.empty() ? "?" : g.foreign.front().user);
        if (sharing(want)) {
            const double room = share_room(i);
            if (room < static_cast<double>(*want.gpu_memory_bytes))
                return fmt::format("GPU{} has {} left to share", g.index, gib(std::max(room, 0.0)));
            return "";
        }
        if (!u.sharers.empty()) return fmt::format("GPU{} shared by job {}", g.index, u.sharers.front());
        if (static_cast<double>(g.memory_used_bytes) >=
            static_cast<double>(g.memory_total_bytes) * pool_.free_memory_percent / 100)
            return fmt::format("GPU{} has {} in use", g.index, gib(static_cast<double>(g.memory_used_bytes)));
        if (want.gpu_memory_bytes && g.memory_total_bytes < *want.gpu_memory_bytes)
            return fmt::format("GPU{} has only {}", g.index, gib(static_cast<double>(g.memory_total_bytes)));
        return "";
    }

    std::vector<unsigned> free_cpus(std::int64_t id) const {
        std::vector<unsigned> out;
        for (unsigned c : pool_.cpus)
            if (!used_cpus_.count(c) && !(kept_cpus_.count(c) && kept_for_ != id)) out.push_back(c);
        return out;
    }

    std::uint64_t free_memory(std::int64_t id) const {
        std::uint64_t taken = used_memory_ + (kept_for_ && *kept_for_ != id ? kept_memory_ : 0);
        return pool_.memory_bytes > taken ? pool_.memory_bytes - taken : 0;
    }

    void keep_for(std::int64_t id, const std::vector<std::size_t>& gpus, const std::vector<unsigned>& cpus,
                  std::uint64_t memory) {
        for (std::size_t i : gpus) use_[i].kept_for = id;
        kept_for_ = id;
        kept_cpus_.insert(cpus.begin(), cpus.end());
        kept_memory_ = memory;
    }

    const Pool& pool() const { return pool_; }

  private:
    const Pool& pool_;
    std::vector<GpuUse> use_;
    std::set<unsigned> used_cpus_, kept_cpus_;
    std::uint64_t used_memory_ = 0, kept_memory_ = 0;
    std::optional<std::int64_t> kept_for_;
};

// What a job would get now, or why not.
struct Fit {
    bool ok = false;
    std::vector<std::size_t> gpus;  // pool indices it may take now (all it needs when ok)
    std::vector<unsigned> cpus;     // likewise
    std::uint64_t memory = 0;
    std::string why;
};

Fit try_fit(const QueueJob& j, const Machine& m) {
    const Pool& pool = m.pool();
    const Resources& want = j.want;
    Fit f;
    std::vector<std::string> why;
    if (wants_gpus(want)) {
        std::vector<std::size_t> candidates;
        if (!want.gpu_uuids.empty()) {
            for (const std::string& uuid : want.gpu_uuids) {
                const auto i = static_cast<std::size_t>(m.gpu_at(uuid));
                if (std::find(candidates.begin(), candidates.end(), i) == candidates.end()) candidates.push_back(i);
            }
        } else {
            for (std::size_t i = 0; i < pool.gpus.size(); ++i) candidates.push_back(i);
            std::sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
                const PoolGpu &x = pool.gpus[a], &y = pool.gpus[b];
                return x.preference != y.preference ? x.preference < y.preference : x.index < y.index;
            });
        }
        const std::size_t need = want.gpu_uuids.empty() ? want.gpus : candidates.size();
        std::vector<std::string> refusals;
        for (std::size_t i : candidates) {
            std::string r = m.gpu_refusal(i, j.id, want);
            if (r.empty())
                f.gpus.push_back(i);
            else
                refusals.push_back(std::move(r));
        }
        // Sharing jobs pack: the GPU with the least room that still fits first.
        if (sharing(want))
            std::stable_sort(f.gpus.begin(), f.gpus.end(),
                             [&](std::size_t a, std::size_t b) { return m.share_room(a) < m.share_room(b); });
        if (f.gpus.size() >= need) {
            f.gpus.resize(need);
        } else {
            std::string w = want.gpu_uuids.empty() ? fmt::format("waiting for {} GPU{}", need, need == 1 ? "" : "s")
                                                   : fmt::format("waiting for its GPU{}", need == 1 ? "" : "s");
            if (want.gpu_memory_bytes) w += " with " + gib(static_cast<double>(*want.gpu_memory_bytes)) + " free";
            constexpr std::size_t kMaxNamed = 8;
            for (std::size_t k = 0; k < refusals.size() && k < kMaxNamed; ++k) w += (k ? ", " : "; ") + refusals[k];
            if (refusals.size() > kMaxNamed) w += fmt::format(" and {} more", refusals.size() - kMaxNamed);
            why.push_back(std::move(w));
        }
    }
    if (want.cpus > 0) {
        std::vector<unsigned> free = m.free_cpus(j.id);
        // The chosen GPUs' own NUMA node first.
        std::set<unsigned> local;
        for (std::size_t i : f.gpus) local.insert(pool.gpus[i].local_cpus.begin(), pool.gpus[i].local_cpus.end());
        std::stable_partition(free.begin(), free.end(), [&](unsigned c) { return local.count(c) > 0; });
        if (free.size() < want.cpus)
            why.push_back(fmt::format("needs {} CPUs, {} free", want.cpus, free.size()));
        else
            free.resize(want.cpus);
        f.cpus = std::move(free);
        std::sort(f.cpus.begin(), f.cpus.end());
    }
    if (want.memory_bytes > 0) {
        const std::uint64_t free = m.free_memory(j.id);
        if (free < want.memory_bytes)
            why.push_back(fmt::format("needs {} of memory, {} not reserved",
                                      gib(static_cast<double>(want.memory_bytes)), gib(static_cast<double>(free))));
        f.memory = std::min(free, want.memory_bytes);
    }
    f.ok = why.empty();
    for (std::size_t k = 0; k < why.size(); ++k) f.why += (k ? "; " : "") + why[k];
    return f;
}

}  // namespace

std::string never_fits(const Resources& want, const Pool& pool) {
    if ((want.gpus > 0 || !want.gpu_uuids.empty()) && !pool.no_gpus.empty())
        return fmt::format("asks for {} GPU(s), this machine has none the queue can use ({})",
                           std::max<std::size_t>(want.gpus, want.gpu_uuids.size()), pool.no_gpus);
    for (const std::string& uuid : want.gpu_uuids)
        if (std::none_of(pool.gpus.begin(), pool.gpus.end(), [&](const PoolGpu& g) { return g.uuid == uuid; }))
            return "GPU " + uuid + " is not one this queue may use";
    if (want.gpus > 0) {
        std::size_t big_enough = 0;
        for (const PoolGpu& g : pool.gpus)
            big_enough += !want.gpu_memory_bytes || g.memory_total_bytes >= *want.gpu_memory_bytes ? 1 : 0;
        if (big_enough < want.gpus)
            return want.gpu_memory_bytes
                       ? fmt::format("asks for {} GPU(s) of {}, this machine has {}", want.gpus,
                                     gib(static_cast<double>(*want.gpu_memory_bytes)), big_enough)
                       : fmt::format("asks for {} GPU(s), this machine has {}", want.gpus, pool.gpus.size());
    }
    if (!pool.machine_known) return "";
    if (want.cpus > pool.cpus.size())
        return fmt::format("asks for {} CPUs, this queue has {}", want.cpus, pool.cpus.size());
    if (want.memory_bytes > pool.memory_bytes)
        return fmt::format("asks for {} of memory, this queue has {}", gib(static_cast<double>(want.memory_bytes)),
                           gib(static_cast<double>(pool.memory_bytes)));
    return "";
}

namespace {

// "starts at 02:00 (in 5h12m)": local time, with the date when it is not today.
std::string delayed_until(std::int64_t at_ms, std::int64_t now_ms) {
    const std::time_t at = static_cast<std::time_t>(at_ms / 1000), now = static_cast<std::time_t>(now_ms / 1000);
    std::tm a{}, n{};
    localtime_r(&at, &a);
    localtime_r(&now, &n);
    char when[32];
    std::strftime(when, sizeof when,
                  a.tm_yday == n.tm_yday && a.tm_year == n.tm_year ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &a);
    const std::int64_t s = (at_ms - now_ms + 999) / 1000;
    return fmt::format("delayed: starts at {} (in {})", when, format_elapsed(s));
}

// Why `j` waits for others of its array or group to end ("" when it need not).
std::string parallel_limit(const QueueJob& j, const Pool& pool, const std::map<std::int64_t, unsigned>& array_holding,
                           const std::map<std::string, unsigned>& group_holding) {
    auto holding = [](const auto& counts, const auto& key) {
        auto it = counts.find(key);
        return it == counts.end() ? 0u : it->second;
    };
    if (j.array_id && j.max_parallel && holding(array_holding, *j.array_id) >= j.max_parallel)
        return fmt::format("waiting for one of the {} running jobs of array {} to end (--max-parallel {})",
                           holding(array_holding, *j.array_id), *j.array_id, j.max_parallel);
    if (!j.group.empty()) {
        auto limit = pool.group_parallel.find(j.group);
        if (limit != pool.group_parallel.end() && holding(group_holding, j.group) >= limit->second)
            return fmt::format("waiting for one of the {} running jobs of group {} to end (its --parallel {})",
                               holding(group_holding, j.group), j.group, limit->second);
    }
    return "";
}

}  // namespace

Plan plan(const std::vector<QueueJob>& jobs, const Pool& pool, std::int64_t now_ms) {
    Plan out;
    Machine m(pool);
    std::map<std::int64_t, const QueueJob*> by_id;
    for (const QueueJob& j : jobs) by_id[j.id] = &j;
    for (const QueueJob& j : jobs)
        if (j.state == store::JobState::starting || j.state == store::JobState::running)
            m.hold(j.id, j.want, j.gpus_held, j.cpus_held);

    // How many of each array and group hold resources (those started below are counted in).
    std::map<std::int64_t, unsigned> array_holding;
    std::map<std::string, unsigned> group_holding;
    for (const QueueJob& j : jobs)
        if (j.state == store::JobState::starting || j.state == store::JobState::running) {
            if (j.array_id) ++array_holding[*j.array_id];
            if (!j.group.empty()) ++group_holding[j.group];
        }

    std::vector<const QueueJob*> queued;
    for (const QueueJob& j : jobs)
        if (j.state == store::JobState::queued) queued.push_back(&j);
    std::sort(queued.begin(), queued.end(), [](const QueueJob* a, const QueueJob* b) {
        return a->priority != b->priority ? a->priority > b->priority : a->id < b->id;
    });

    // Why a job that asks for exactly this did not fit: every later job asking the same gets the
    // same answer until the machine's use changes (a start; the head's reservation), so a queue of
    // thousands of like jobs costs one fit per kind, not one per job. Only jobs other than the head
    // read it (the head's own reservation is free to it), and it is made only once there is a head.
    using Kind =
        std::tuple<unsigned, std::vector<std::string>, std::optional<std::uint64_t>, bool, unsigned, std::uint64_t>;
    std::map<Kind, std::string> refused;
    for (const QueueJob* jp : queued) {
        const QueueJob& j = *jp;
        // Dependencies.
        std::string waits_for, never;
        for (std::int64_t d : j.after) {
            auto it = by_id.find(d);
            if (it == by_id.end()) {
                never = fmt::format("job {} it waits for does not exist", d);
                break;
            }
            const QueueJob& dep = *it->second;
            if (!store::is_final(dep.state)) {
                if (waits_for.empty())
                    waits_for = fmt::format("waiting for job {} to {}", d, j.after_ok ? "succeed" : "end");
            } else if (j.after_ok && dep.state != store::JobState::done) {
                never = fmt::format("job {} it waits for ended {}", d, store::state_name(dep.state));
                break;
            }
        }
        if (never.empty()) never = never_fits(j.want, pool);
        if (!never.empty()) {
            out.never[j.id] = never;
            out.waiting[j.id] = "can never run: " + never;
            continue;
        }
        if (!waits_for.empty()) {
            out.waiting[j.id] = waits_for;
            continue;
        }
        if (j.not_before_ms && *j.not_before_ms > now_ms) {
            out.waiting[j.id] = delayed_until(*j.not_before_ms, now_ms);
            continue;
        }
        if (std::string limit = parallel_limit(j, pool, array_holding, group_holding); !limit.empty()) {
            out.waiting[j.id] = limit;
            continue;
        }
        if (wants_gpus(j.want) && !pool.gpus_known) {
            out.waiting[j.id] = "waiting for the GPUs to be readable" +
                                (pool.gpus_problem.empty() ? std::string() : ": " + pool.gpus_problem);
            continue;
        }
        const Kind kind{j.want.gpus,  j.want.gpu_uuids, j.want.gpu_memory_bytes,
                        j.want.share, j.want.cpus,      j.want.memory_bytes};
        if (out.head) {
            auto known = refused.find(kind);
            if (known != refused.end()) {
                out.waiting[j.id] = known->second;
                continue;
            }
        }
        Fit f = try_fit(j, m);
        if (f.ok) {
            refused.clear();
            Start s;
            s.job = j.id;
            std::sort(f.gpus.begin(), f.gpus.end(),
                      [&](std::size_t a, std::size_t b) { return pool.gpus[a].index < pool.gpus[b].index; });
            for (std::size_t i : f.gpus) s.gpus.push_back(pool.gpus[i].uuid);
            s.cpus = f.cpus;
            m.hold(j.id, j.want, s.gpus, s.cpus);
            if (j.array_id) ++array_holding[*j.array_id];
            if (!j.group.empty()) ++group_holding[j.group];
            out.starts.push_back(std::move(s));
            continue;
        }
        out.waiting[j.id] = f.why;
        if (out.head) refused[kind] = f.why;
        if (!out.head) {
            // First in line and blocked: what it could take now is kept for it. Named GPUs are kept
            // whoever holds them now, so that none of them is handed on when it frees.
            out.head = j.id;
            std::vector<std::size_t> keep = f.gpus;
            for (const std::string& uuid : j.want.gpu_uuids) keep.push_back(static_cast<std::size_t>(m.gpu_at(uuid)));
            m.keep_for(j.id, keep, f.cpus, f.memory);
        }
    }
    return out;
}

}  // namespace baton::queue
