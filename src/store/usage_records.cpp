#include "store/usage_records.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

namespace baton::store {

UsageRecord usage_record_of(const diagnose::JobUse& job) {
    UsageRecord r;
    r.label = job.label;
    r.kind = job.kind;
    r.job = job.id;
    r.name = job.name;
    r.user = job.user;
    r.ended = job.ended;
    bool first = true;
    for (const diagnose::NodeUse& n : job.nodes) {
        r.start_ms = first ? n.first_unix_ms : std::min(r.start_ms, n.first_unix_ms);
        r.end_ms = std::max(r.end_ms, n.last_unix_ms);
        first = false;
        r.seconds = std::max(r.seconds, n.seconds);
        r.gpu_seconds += n.gpu_seconds;
        r.cpu_seconds_allocated += n.cpu_seconds_allocated;
        r.cpu_seconds += n.cpu_seconds;
        r.memory_peak_bytes = std::max(r.memory_peak_bytes, n.memory_peak_bytes);
        if (n.cpus) r.cpus = r.cpus.value_or(0) + *n.cpus;
        if (n.memory_allocated_bytes)
            r.memory_allocated_bytes = std::max(r.memory_allocated_bytes.value_or(0), *n.memory_allocated_bytes);
        unsigned allocated = 0;
        for (const diagnose::GpuUse& g : n.gpus) {
            allocated += g.allocated ? 1 : 0;
            r.gpu_busy_seconds += g.busy_seconds;
            r.sm_seconds += g.sm_seconds;
            r.sm_busy_seconds += g.sm_busy_seconds;
            if (g.memory_peak_bytes >= r.gpu_memory_peak_bytes) {
                r.gpu_memory_peak_bytes = g.memory_peak_bytes;
                r.gpu_memory_total_bytes = std::max(r.gpu_memory_total_bytes, g.memory_total_bytes);
            }
        }
        // Allocated GPUs when the scheduler said which, else those its processes used.
        r.gpus += allocated ? allocated : static_cast<unsigned>(n.gpus.size());
    }
    return r;
}

bool counts_for_usage(const UsageRecord& r) {
    return r.gpus > 0 || r.kind == "queue" || r.kind == "slurm" || r.kind == "pod";
}

UsageRecord UsageStretches::stretch_record(const diagnose::JobUse& j, const Stretch* st) {
    UsageRecord r = usage_record_of(j);
    if (!st || st->first_seen_ms != j.nodes.front().first_unix_ms) return r;
    r.start_ms = st->start_ms;
    r.seconds -= st->base.seconds;
    r.gpu_seconds -= st->base.gpu_seconds;
    r.gpu_busy_seconds -= st->base.gpu_busy_seconds;
    r.sm_seconds -= st->base.sm_seconds;
    r.sm_busy_seconds -= st->base.sm_busy_seconds;
    r.cpu_seconds_allocated -= st->base.cpu_seconds_allocated;
    r.cpu_seconds -= st->base.cpu_seconds;
    return r;
}

std::vector<UsageRecord> UsageStretches::current(const std::vector<diagnose::JobUse>& jobs) const {
    std::vector<UsageRecord> out;
    for (const diagnose::JobUse& j : jobs) {
        if (j.nodes.empty()) continue;
        auto it = stretches_.find(j.label);
        UsageRecord r = stretch_record(j, it == stretches_.end() ? nullptr : &it->second);
        if (counts_for_usage(r)) out.push_back(std::move(r));
    }
    return out;
}

std::vector<UsageRecord> UsageStretches::take(const std::vector<diagnose::JobUse>& jobs, std::int64_t now_ms,
                                              bool ended_only) {
    std::vector<UsageRecord> out;
    std::set<std::string> seen;
    for (const diagnose::JobUse& j : jobs) {
        if (j.nodes.empty()) continue;
        seen.insert(j.label);
        const std::int64_t first_seen = j.nodes.front().first_unix_ms;
        Stretch& st = stretches_[j.label];
        if (st.first_seen_ms != first_seen) st = Stretch{first_seen, first_seen, {}, -1, false};
        if (j.nodes.front().last_unix_ms == st.written_end_ms && j.ended == st.written_ended) continue;
        if (ended_only && !(j.ended && !st.written_ended)) continue;
        const UsageRecord whole = usage_record_of(j);
        if (!counts_for_usage(whole)) continue;
        UsageRecord r = stretch_record(j, &st);
        st.written_end_ms = r.end_ms;
        st.written_ended = r.ended;
        out.push_back(std::move(r));
        // An hour's stretch is closed: the next record is the next stretch, from this last sample.
        if (!st.written_ended && now_ms - st.start_ms >= kUsageStretchMs) {
            st.start_ms = st.written_end_ms;
            st.base =
                Totals{whole.seconds,         whole.gpu_seconds,           whole.gpu_busy_seconds, whole.sm_seconds,
                       whole.sm_busy_seconds, whole.cpu_seconds_allocated, whole.cpu_seconds};
        }
    }
    std::erase_if(stretches_, [&](const auto& e) { return !seen.count(e.first); });
    return out;
}

}  // namespace baton::store

namespace baton::store {

std::vector<UsageRecord> with_newer_stretches(std::vector<UsageRecord> stretches,
                                              const std::vector<UsageRecord>& newer) {
    std::set<std::pair<std::string, std::int64_t>> replaced;
    for (const UsageRecord& r : newer) replaced.insert({r.label, r.start_ms});
    std::erase_if(stretches, [&](const UsageRecord& r) { return replaced.count({r.label, r.start_ms}) > 0; });
    stretches.insert(stretches.end(), newer.begin(), newer.end());
    return stretches;
}

std::vector<UsageRecord> usage_by_job(const std::vector<UsageRecord>& stretches, const std::string& user) {
    std::vector<UsageRecord> out;
    std::map<std::string, std::size_t> at;
    std::vector<const UsageRecord*> sorted;
    for (const UsageRecord& r : stretches)
        if (user.empty() || r.user == user) sorted.push_back(&r);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const UsageRecord* a, const UsageRecord* b) { return a->start_ms < b->start_ms; });
    for (const UsageRecord* p : sorted) {
        const UsageRecord& r = *p;
        auto [it, fresh] = at.try_emplace(r.label, out.size());
        if (fresh) {
            out.push_back(r);
            continue;
        }
        UsageRecord& m = out[it->second];
        m.start_ms = std::min(m.start_ms, r.start_ms);
        if (r.end_ms >= m.end_ms) {
            m.end_ms = r.end_ms;
            m.ended = r.ended;
        }
        for (auto [to, from] : {std::pair{&m.name, &r.name}, std::pair{&m.user, &r.user}})
            if (!from->empty()) *to = *from;
        m.seconds += r.seconds;
        m.gpus = std::max(m.gpus, r.gpus);
        m.gpu_seconds += r.gpu_seconds;
        m.gpu_busy_seconds += r.gpu_busy_seconds;
        m.sm_seconds += r.sm_seconds;
        m.sm_busy_seconds += r.sm_busy_seconds;
        if (r.gpu_memory_peak_bytes >= m.gpu_memory_peak_bytes) {
            m.gpu_memory_peak_bytes = r.gpu_memory_peak_bytes;
            m.gpu_memory_total_bytes = std::max(m.gpu_memory_total_bytes, r.gpu_memory_total_bytes);
        }
        if (r.cpus) m.cpus = std::max(m.cpus.value_or(0), *r.cpus);
        m.cpu_seconds_allocated += r.cpu_seconds_allocated;
        m.cpu_seconds += r.cpu_seconds;
        m.memory_peak_bytes = std::max(m.memory_peak_bytes, r.memory_peak_bytes);
        if (r.memory_allocated_bytes)
            m.memory_allocated_bytes = std::max(m.memory_allocated_bytes.value_or(0), *r.memory_allocated_bytes);
    }
    return out;
}

nlohmann::json usage_json(const UsageRecord& r) {
    nlohmann::json j = {{"label", r.label},
                        {"kind", r.kind},
                        {"job", r.job},
                        {"name", r.name},
                        {"user", r.user},
                        {"start_ms", r.start_ms},
                        {"end_ms", r.end_ms},
                        {"ended", r.ended},
                        {"seconds", r.seconds},
                        {"gpus", r.gpus},
                        {"gpu_seconds", r.gpu_seconds},
                        {"gpu_busy_seconds", r.gpu_busy_seconds},
                        {"sm_seconds", r.sm_seconds},
                        {"sm_busy_seconds", r.sm_busy_seconds},
                        {"gpu_memory_peak_bytes", r.gpu_memory_peak_bytes},
                        {"gpu_memory_total_bytes", r.gpu_memory_total_bytes},
                        {"cpus", r.cpus ? nlohmann::json(*r.cpus) : nlohmann::json(nullptr)},
                        {"cpu_seconds_allocated", r.cpu_seconds_allocated},
                        {"cpu_seconds", r.cpu_seconds},
                        {"memory_peak_bytes", r.memory_peak_bytes},
                        {"memory_allocated_bytes", r.memory_allocated_bytes ? nlohmann::json(*r.memory_allocated_bytes)
                                                                            : nlohmann::json(nullptr)}};
    return j;
}

Result<UsageRecord> parse_usage_json(const nlohmann::json& j) {
    if (!j.is_object()) return make_error("a usage record is not an object");
    std::string bad;  // the first key that is missing or of the wrong kind
    using json = nlohmann::json;
    auto value = [&](const char* key, bool (*fits)(const json&)) -> const json* {
        auto it = j.find(key);
        if (it != j.end() && fits(*it)) return &*it;
        if (bad.empty()) bad = key;
        return nullptr;
    };
    auto text = [&](const char* key, std::string& to) {
        if (const json* v = value(key, [](const json& x) { return x.is_string(); })) to = v->get<std::string>();
    };
    auto number = [&](const char* key, double& to) {
        auto fits = [](const json& x) {
            return x.is_number() && std::isfinite(x.get<double>()) && x.get<double>() >= 0;
        };
        if (const json* v = value(key, fits)) to = v->get<double>();
    };
    auto millis = [&](const char* key, std::int64_t& to) {
        if (const json* v = value(key, [](const json& x) { return x.is_number_integer(); }))
            to = v->get<std::int64_t>();
    };
    // A count (null or absent: none, where `optional`).
    auto count = [&](const char* key, std::uint64_t& to, bool optional, bool& present) {
        auto it = j.find(key);
        present = false;
        if (optional && (it == j.end() || it->is_null())) return;
        if (const json* v = value(key, [](const json& x) { return x.is_number_unsigned(); })) {
            to = v->get<std::uint64_t>();
            present = true;
        }
    };
    UsageRecord r;
    text("label", r.label);
    text("kind", r.kind);
    text("job", r.job);
    text("name", r.name);
    text("user", r.user);
    millis("start_ms", r.start_ms);
    millis("end_ms", r.end_ms);
    if (const json* v = value("ended", [](const json& x) { return x.is_boolean(); })) r.ended = v->get<bool>();
    number("seconds", r.seconds);
    number("gpu_seconds", r.gpu_seconds);
    number("gpu_busy_seconds", r.gpu_busy_seconds);
    number("sm_seconds", r.sm_seconds);
    number("sm_busy_seconds", r.sm_busy_seconds);
    number("cpu_seconds_allocated", r.cpu_seconds_allocated);
    number("cpu_seconds", r.cpu_seconds);
    bool present = false;
    std::uint64_t v = 0;
    count("gpus", v, false, present);
    r.gpus = static_cast<unsigned>(std::min<std::uint64_t>(v, 1u << 20));
    count("gpu_memory_peak_bytes", r.gpu_memory_peak_bytes, false, present);
    count("gpu_memory_total_bytes", r.gpu_memory_total_bytes, false, present);
    count("memory_peak_bytes", r.memory_peak_bytes, false, present);
    v = 0;
    count("cpus", v, true, present);
    if (present) r.cpus = static_cast<unsigned>(std::min<std::uint64_t>(v, 1u << 20));
    v = 0;
    count("memory_allocated_bytes", v, true, present);
    if (present) r.memory_allocated_bytes = v;
    if (!bad.empty()) return make_error(std::string("a usage record's ") + bad + " is missing or not valid");
    return r;
}

}  // namespace baton::store
