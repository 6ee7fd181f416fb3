#include "serve/node_metrics.hpp"

#include <array>

#include "formats/snapshot_fields.hpp"

namespace baton::serve {

namespace {

// The metrics that are not one snapshot field each (the rest are the fields the tables of
// formats/snapshot_fields.cpp mark `history`).
constexpr std::array<std::string_view, 2> kDerived = {
    "cpu.core_utilization_percent",  // each core's utilization_percent, under its own name
    "gpu.memory_used_percent",       // used / total
};

using Emit = std::function<void(std::string_view, const std::string&, double)>;

// Each `history` field of `r` that has a value, as "<prefix>.<key>".
template <class R>
void emit_fields(const formats::FieldTable<R>& t, const R& r, const std::string& subject, const Emit& emit) {
    std::string name = std::string(t.history_prefix) + ".";
    const std::size_t stem = name.size();
    for (const formats::Field<R>& f : t.fields) {
        if (!f.history) continue;
        const std::optional<double> v = formats::numeric_value(r, f.member);
        if (!v) continue;
        name.resize(stem);
        name += f.key;
        emit(name, subject, *v);
    }
}

template <class R>
bool in_table(const formats::FieldTable<R>& t, std::string_view metric) {
    const std::string_view prefix = t.history_prefix;
    if (metric.size() <= prefix.size() + 1 || metric.substr(0, prefix.size()) != prefix || metric[prefix.size()] != '.')
        return false;
    const std::string_view key = metric.substr(prefix.size() + 1);
    for (const formats::Field<R>& f : t.fields)
        if (f.history && key == f.key) return true;
    return false;
}

}  // namespace

bool known_metric(std::string_view metric) {
    for (std::string_view m : kDerived)
        if (m == metric) return true;
    return in_table(formats::cpu_time_fields(), metric) || in_table(formats::memory_fields(), metric) ||
           in_table(formats::swap_fields(), metric) || in_table(formats::disk_fields(), metric) ||
           in_table(formats::network_fields(), metric) || in_table(formats::gpu_fields(), metric);
}

void for_each_metric(const Snapshot& s, bool per_core, const Emit& emit) {
    const std::string host = "host";
    emit_fields(formats::cpu_time_fields(), s.cpu.total, host, emit);
    if (per_core)
        for (const CpuCore& c : s.cpu.cores)
            if (c.times.utilization_percent)
                emit("cpu.core_utilization_percent", "cpu:" + std::to_string(c.id), *c.times.utilization_percent);
    emit_fields(formats::memory_fields(), s.memory, host, emit);
    emit_fields(formats::swap_fields(), s.swap, host, emit);
    for (const DiskStats& d : s.disks) emit_fields(formats::disk_fields(), d, "disk:" + d.name, emit);
    for (const NetworkStats& n : s.networks) emit_fields(formats::network_fields(), n, "net:" + n.name, emit);
    for (const GpuInfo& g : s.gpus) {
        if (g.stale || g.lost) continue;  // no fresh values: a gap, not a repeat
        const std::string subject = "gpu:" + std::to_string(g.index);
        emit_fields(formats::gpu_fields(), g, subject, emit);
        if (g.memory_used_bytes && g.memory_total_bytes && *g.memory_total_bytes > 0)
            emit("gpu.memory_used_percent", subject,
                 100.0 * static_cast<double>(*g.memory_used_bytes) / static_cast<double>(*g.memory_total_bytes));
    }
}

}  // namespace baton::serve
