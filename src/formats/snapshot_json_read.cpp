#include "formats/snapshot_json_read.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "sample/linux/cgroup_owner.hpp"
#include "formats/snapshot_fields.hpp"

namespace baton::formats {

namespace {

using nlohmann::json;

// A type error at a key path, turned into the Error of the whole parse.
struct BadValue : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Reader {
  public:
    Reader(const json& object, std::string path) : o_(object), path_(std::move(path)) {
        if (!o_.is_object()) fail("", "an object");
    }

    bool has(const char* key) const { return o_.contains(key) && !o_.at(key).is_null(); }

    [[noreturn]] void fail(const char* key, const std::string& what) const {
        std::string where = path_;
        if (*key) where += where.empty() ? key : std::string(".") + key;
        throw BadValue("'" + (where.empty() ? std::string("(top)") : where) + "' must be " + what);
    }

    const json& need(const char* key) const {
        if (!has(key)) fail(key, "present");
        return o_.at(key);
    }

    double number(const char* key) const {
        const json& v = need(key);
        if (!v.is_number()) fail(key, "a number");
        return v.get<double>();
    }
    std::optional<double> opt_number(const char* key) const {
        if (!has(key)) return std::nullopt;
        return number(key);
    }
    template <typename U>
    U unsigned_value(const char* key, std::uint64_t max = std::numeric_limits<U>::max()) const {
        const json& v = need(key);
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
            fail(key, "a non-negative integer");
        const auto x = v.get<std::uint64_t>();
        if (x > max) fail(key, "an integer from 0 to " + std::to_string(max));
        return static_cast<U>(x);
    }
    template <typename U>
    std::optional<U> opt_unsigned(const char* key) const {
        if (!has(key)) return std::nullopt;
        return unsigned_value<U>(key);
    }
    std::string string(const char* key) const {
        const json& v = need(key);
        if (!v.is_string()) fail(key, "a string");
        return v.get<std::string>();
    }
    std::optional<std::string> opt_string(const char* key) const {
        if (!has(key)) return std::nullopt;
        return string(key);
    }
    bool boolean(const char* key) const {
        const json& v = need(key);
        if (!v.is_boolean()) fail(key, "true or false");
        return v.get<bool>();
    }
    std::optional<bool> opt_boolean(const char* key) const {
        if (!has(key)) return std::nullopt;
        return boolean(key);
    }
    const json& array(const char* key) const {
        const json& v = need(key);
        if (!v.is_array()) fail(key, "an array");
        return v;
    }
    Reader object(const char* key) const { return Reader(need(key), sub(key)); }
    std::string sub(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
    std::string item(const char* key, std::size_t i) const { return sub(key) + "[" + std::to_string(i) + "]"; }

  private:
    const json& o_;
    std::string path_;
};

// One value of type T at `key` (present: the caller checked).
template <class T>
T read_value(const Reader& r, const char* key, std::uint64_t max) {
    if constexpr (std::is_same_v<T, double>) {
        return r.number(key);
    } else if constexpr (std::is_same_v<T, bool>) {
        return r.boolean(key);
    } else if constexpr (std::is_same_v<T, std::string>) {
        return r.string(key);
    } else if constexpr (std::is_enum_v<T>) {
        const std::optional<T> v = enum_from_name<T>(r.string(key));
        if (!v) r.fail(key, enum_choices<T>());
        return *v;
    } else {
        return r.unsigned_value<T>(key, max ? max : std::numeric_limits<T>::max());
    }
}

// Every field of the table: an optional one when present, a plain one always (or, lenient, when
// present: older recordings lack it and it keeps its default).
// GCC 12 cannot tell which member a member pointer names, and warns that setting an optional's
// flag through one may write past a plain member of the record (-Wstringop-overflow): it cannot
// happen, the variant's alternative is the member's own type.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
template <class R>
void read_fields(const Reader& r, const FieldTable<R>& t, R& out) {
    for (const Field<R>& f : t.fields)
        std::visit(
            [&](auto p) {
                auto& v = out.*p;
                using V = std::decay_t<decltype(v)>;
                if constexpr (field_detail::IsOptional<V>::value) {
                    if (r.has(f.key)) v = read_value<typename V::value_type>(r, f.key, f.max);
                } else {
                    if (!f.lenient || r.has(f.key)) v = read_value<V>(r, f.key, f.max);
                }
            },
            f.member);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

void read_cpu_times(const Reader& r, CpuTimes& t) {
    read_fields(r, cpu_time_fields(), t);
}

// Absent in recordings made before baton wrote the counters.
std::optional<CpuSeconds> read_cpu_seconds(const Reader& r) {
    if (!r.has("seconds_total")) return std::nullopt;
    Reader s = r.object("seconds_total");
    return CpuSeconds{s.number("user"),   s.number("nice"), s.number("system"),  s.number("idle"),
                      s.number("iowait"), s.number("irq"),  s.number("softirq"), s.number("steal")};
}

std::optional<PressureLine> read_pressure_line(const Reader& r, const char* key) {
    if (!r.has(key)) return std::nullopt;
    Reader l = r.object(key);
    PressureLine p;
    p.avg10 = l.number("avg10");
    p.avg60 = l.number("avg60");
    p.avg300 = l.number("avg300");
    p.total_us = l.unsigned_value<std::uint64_t>("total_microseconds");
    return p;
}

void read_pressure(const Reader& r, const char* key, PressureResource& out) {
    if (!r.has(key)) return;
    Reader p = r.object(key);
    out.some = read_pressure_line(p, "some");
    out.full = read_pressure_line(p, "full");
}

// An array of pids (32-bit), or a one-line error naming `key`.
std::vector<std::uint32_t> read_pids(const Reader& r, const char* key) {
    std::vector<std::uint32_t> out;
    for (const json& v : r.array(key)) {
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() > 0xFFFFFFFFu) r.fail(key, "an array of pids");
        out.push_back(v.get<std::uint32_t>());
    }
    return out;
}

GpuInfo read_gpu(const Reader& r) {
    GpuInfo g;
    g.index = r.unsigned_value<unsigned>("index");
    g.uuid = r.string("uuid");
    g.name = r.string("name");
    g.pci_bus_id = r.string("pci_bus_id");
    g.lost = r.opt_boolean("lost").value_or(false);
    read_fields(r, gpu_fields(), g);
    if (r.has("throttle_reasons")) {
        std::vector<std::string> reasons;
        for (const json& v : r.array("throttle_reasons")) {
            if (!v.is_string()) r.fail("throttle_reasons", "an array of strings");
            reasons.push_back(v.get<std::string>());
        }
        g.throttle_reasons = std::move(reasons);
    }
    if (r.has("mig_instances")) {
        const json& migs = r.array("mig_instances");
        for (std::size_t i = 0; i < migs.size(); ++i) {
            Reader m(migs[i], r.item("mig_instances", i));
            MigInstance mi;
            mi.gpu_instance_id = m.unsigned_value<unsigned>("gpu_instance_id");
            mi.compute_instance_id = m.unsigned_value<unsigned>("compute_instance_id");
            mi.uuid = m.string("uuid");
            mi.name = m.string("name");
            mi.memory_total_bytes = m.opt_unsigned<std::uint64_t>("memory_total_bytes");
            mi.memory_used_bytes = m.opt_unsigned<std::uint64_t>("memory_used_bytes");
            mi.pids = read_pids(m, "pids");
            g.mig_instances.push_back(std::move(mi));
        }
    }
    if (r.has("xid_errors")) {
        const json& xids = r.array("xid_errors");
        std::vector<XidCount> v;
        for (std::size_t i = 0; i < xids.size(); ++i) {
            Reader x(xids[i], r.item("xid_errors", i));
            XidCount c;
            c.xid = x.unsigned_value<unsigned>("xid");
            c.count = x.unsigned_value<std::uint64_t>("count");
            const auto last = parse_rfc3339(x.string("last_time"));
            if (!last) x.fail("last_time", "an RFC 3339 time");
            c.last_unix_ms = *last;
            v.push_back(c);
        }
        g.xid_errors = std::move(v);
    }
    const json& procs = r.array("processes");
    for (std::size_t i = 0; i < procs.size(); ++i) {
        Reader p(procs[i], r.item("processes", i));
        GpuProcess gp;
        read_fields(p, gpu_process_fields(), gp);
        g.processes.push_back(std::move(gp));
    }
    return g;
}

ProcessInfo read_process(const Reader& r) {
    ProcessInfo p;
    p.pid = r.unsigned_value<std::uint32_t>("pid");
    p.ppid = r.unsigned_value<std::uint32_t>("ppid");
    const std::string state = r.string("state");
    if (state.size() != 1) r.fail("state", "one character");
    p.state = state[0];
    p.uid = r.unsigned_value<std::uint32_t>("uid");
    p.user = r.string("user");
    p.name = r.string("name");
    p.command = r.string("command");
    const auto start = parse_rfc3339(r.string("start_time"));
    if (!start) r.fail("start_time", "an RFC 3339 time");
    p.start_time_ms = *start;
    p.cgroup = r.string("cgroup");
    p.job = os::classify_cgroup(p.cgroup);  // what "job" says is derived from the path: read it from there
    p.container_pid = r.opt_unsigned<std::uint32_t>("container_pid");
    p.cpu_percent = r.opt_number("cpu_percent");
    p.cpu_seconds_total = r.opt_number("cpu_seconds_total").value_or(0);
    p.rss_bytes = r.unsigned_value<std::uint64_t>("rss_bytes");
    p.threads = r.unsigned_value<unsigned>("threads");
    p.read_bytes_per_second = r.opt_number("read_bytes_per_second");
    p.write_bytes_per_second = r.opt_number("write_bytes_per_second");
    p.gpu_memory_bytes = r.opt_unsigned<std::uint64_t>("gpu_memory_bytes");
    if (r.has("gpu_indices"))
        for (const json& v : r.array("gpu_indices")) {
            if (!v.is_number_unsigned()) r.fail("gpu_indices", "an array of GPU indices");
            p.gpu_indices.push_back(v.get<unsigned>());
        }
    p.gpu_memory_ambiguous = r.opt_boolean("gpu_memory_ambiguous").value_or(false);
    return p;
}

std::vector<unsigned> read_indices(const Reader& r, const char* key) {
    std::vector<unsigned> out;
    if (!r.has(key)) return out;
    for (const json& v : r.array(key)) {
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() > 0xFFFFu) r.fail(key, "an array of GPU indices");
        out.push_back(v.get<unsigned>());
    }
    return out;
}

JobInfo read_job(const Reader& r) {
    JobInfo j;
    const auto kind = enum_from_name<JobKind>(r.string("kind"));
    if (!kind || *kind == JobKind::none) r.fail("kind", "slurm, pod, container, service or user");
    j.kind = *kind;
    j.id = r.string("id");
    j.label = r.string("label");
    j.name = r.opt_string("name").value_or("");
    j.user = r.opt_string("user").value_or("");
    j.account = r.opt_string("account").value_or("");
    j.partition = r.opt_string("partition").value_or("");
    j.pod_namespace = r.opt_string("namespace").value_or("");
    j.container = r.opt_string("container").value_or("");
    j.names_from = r.opt_string("names_from").value_or("");
    j.pids = read_pids(r, "pids");
    j.gpus = read_indices(r, "gpus");
    j.allocated_gpus = read_indices(r, "allocated_gpus");
    j.allocated_cpus = r.opt_unsigned<unsigned>("allocated_cpus");
    j.allocated_memory_bytes = r.opt_unsigned<std::uint64_t>("allocated_memory_bytes");
    j.time_limit_seconds = r.opt_number("time_limit_seconds");
    if (std::optional<double> start = r.opt_number("start_time_unix"); start && std::abs(*start) < 1e15)
        j.start_time_unix = static_cast<std::int64_t>(*start);
    return j;
}

Snapshot read_snapshot(const json& doc) {
    Reader r(doc, "");
    Snapshot s;
    const auto time = parse_rfc3339(r.string("time"));
    if (!time) r.fail("time", "an RFC 3339 time");
    s.time_unix_ms = *time;
    read_fields(r, snapshot_fields(), s);
    if (!r.has("gpu_state")) s.gpu_state = gpu_state_from_status(s.gpu_status);  // a recording from before it
    if (s.monotonic_seconds && *s.monotonic_seconds < 0) r.fail("monotonic_seconds", "a time that is not negative");

    Reader host = r.object("host");
    read_fields(host, host_fields(), s.host);

    Reader cpu = r.object("cpu");
    read_cpu_times(cpu, s.cpu.total);
    s.cpu.seconds_total = read_cpu_seconds(cpu);
    const json& load = cpu.array("load_average");
    for (std::size_t i = 0; i < 3 && i < load.size(); ++i) {
        if (!load[i].is_number()) cpu.fail("load_average", "an array of numbers");
        s.cpu.load_average[i] = load[i].get<double>();
    }
    read_fields(cpu, cpu_fields(), s.cpu);
    const json& cores = cpu.array("cores");
    for (std::size_t i = 0; i < cores.size(); ++i) {
        Reader c(cores[i], cpu.item("cores", i));
        CpuCore core;
        core.id = c.unsigned_value<unsigned>("id");
        read_cpu_times(c, core.times);
        core.seconds_total = read_cpu_seconds(c);
        s.cpu.cores.push_back(core);
    }

    Reader mem = r.object("memory");
    read_fields(mem, memory_fields(), s.memory);

    Reader swap = r.object("swap");
    read_fields(swap, swap_fields(), s.swap);

    if (r.has("pressure")) {
        Reader p = r.object("pressure");
        s.pressure.available = true;
        read_pressure(p, "cpu", s.pressure.cpu);
        read_pressure(p, "memory", s.pressure.memory);
        read_pressure(p, "io", s.pressure.io);
    }

    const json& disks = r.array("disks");
    for (std::size_t i = 0; i < disks.size(); ++i) {
        Reader d(disks[i], r.item("disks", i));
        DiskStats x;
        x.name = d.string("name");
        read_fields(d, disk_fields(), x);
        s.disks.push_back(std::move(x));
    }
    if (r.has("filesystems")) {
        const json& fs = r.array("filesystems");
        for (std::size_t i = 0; i < fs.size(); ++i) {
            Reader f(fs[i], r.item("filesystems", i));
            FilesystemStats x;
            x.mount_point = f.string("mount_point");
            read_fields(f, filesystem_fields(), x);
            x.writer_pids = read_pids(f, "writer_pids");
            s.filesystems.push_back(std::move(x));
        }
    }
    const json& nets = r.array("networks");
    for (std::size_t i = 0; i < nets.size(); ++i) {
        Reader n(nets[i], r.item("networks", i));
        NetworkStats x;
        x.name = n.string("name");
        read_fields(n, network_fields(), x);
        s.networks.push_back(std::move(x));
    }

    const json& gpus = r.array("gpus");
    for (std::size_t i = 0; i < gpus.size(); ++i) s.gpus.push_back(read_gpu(Reader(gpus[i], r.item("gpus", i))));

    s.processes_collected = r.has("processes");
    if (s.processes_collected) {
        const json& procs = r.array("processes");
        for (std::size_t i = 0; i < procs.size(); ++i)
            s.processes.push_back(read_process(Reader(procs[i], r.item("processes", i))));
        // Rules look processes up by pid: keep the order the sampler guarantees.
        std::sort(s.processes.begin(), s.processes.end(),
                  [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
    }
    // Recordings made before baton grouped processes into jobs have none.
    if (r.has("jobs")) {
        const json& jobs = r.array("jobs");
        for (std::size_t i = 0; i < jobs.size(); ++i) s.jobs.push_back(read_job(Reader(jobs[i], r.item("jobs", i))));
    }
    return s;
}

}  // namespace

Result<Snapshot> parse_snapshot_json(std::string_view text) {
    json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return make_error("not valid JSON");
    try {
        return read_snapshot(doc);
    } catch (const BadValue& e) {
        return make_error(e.what());
    } catch (const json::exception& e) {
        return make_error(std::string("unexpected value: ") + e.what());
    }
}

Result<diagnose::Window> read_snapshot_stream(std::istream& in, const std::string& path) {
    diagnose::Window w;
    std::string line;
    // Whether the recording carried its own monotonic clock; one file is one kind or the other.
    std::optional<bool> recorded_monotonic;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        Result<Snapshot> s = parse_snapshot_json(line);
        if (!s.ok()) return make_error(path + ":" + std::to_string(n) + ": " + s.error().message);
        const std::string where = path + ":" + std::to_string(n) + ": ";
        if (!recorded_monotonic) recorded_monotonic = s->monotonic_seconds.has_value();
        if (*recorded_monotonic != s->monotonic_seconds.has_value())
            return make_error(where + "snapshots with and without monotonic_seconds: files put together");
        if (!*recorded_monotonic) {
            const double base = w.empty() ? static_cast<double>(s->time_unix_ms) / 1000.0 : *w.back().monotonic_seconds;
            s->monotonic_seconds = base + (w.empty() ? 0.0 : s->interval_seconds);
        }
        if (!w.empty()) {
            const Snapshot& prev = w.back();
            // /proc/uptime has a resolution of 10 ms: a step back of more than that is another recording.
            constexpr double kUptimeResolution = 0.01;
            const bool back = *recorded_monotonic
                                  ? *s->monotonic_seconds < *prev.monotonic_seconds
                                  : (s->host.uptime_seconds && prev.host.uptime_seconds &&
                                     *s->host.uptime_seconds < *prev.host.uptime_seconds - kUptimeResolution);
            if (back) return make_error(where + "snapshots must be in time order");
        }
        w.push_back(std::move(*s));
    }
    if (in.bad()) return make_error("cannot read " + path);
    return w;
}

}  // namespace baton::formats
