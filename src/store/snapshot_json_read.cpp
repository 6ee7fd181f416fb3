#include "store/snapshot_json_read.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"

namespace baton {

namespace {

using nlohmann::json;

// More CPUs than Linux supports (NR_CPUS is at most 8192): a damaged or hostile recording.
constexpr std::uint64_t kMaxCpus = 65536;

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

void read_cpu_times(const Reader& r, CpuTimes& t) {
    t.utilization_percent = r.opt_number("utilization_percent");
    t.user_percent = r.opt_number("user_percent");
    t.system_percent = r.opt_number("system_percent");
    t.iowait_percent = r.opt_number("iowait_percent");
    t.steal_percent = r.opt_number("steal_percent");
    t.idle_percent = r.opt_number("idle_percent");
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

GpuInfo read_gpu(const Reader& r) {
    GpuInfo g;
    g.index = r.unsigned_value<unsigned>("index");
    g.uuid = r.string("uuid");
    g.name = r.string("name");
    g.pci_bus_id = r.string("pci_bus_id");
    g.minor_number = r.opt_unsigned<unsigned>("minor_number");
    g.stale = r.boolean("stale");
    g.error = r.opt_string("error");
    g.lost = r.opt_boolean("lost").value_or(false);
    g.utilization_percent = r.opt_number("utilization_percent");
    g.memory_utilization_percent = r.opt_number("memory_utilization_percent");
    g.memory_total_bytes = r.opt_unsigned<std::uint64_t>("memory_total_bytes");
    g.memory_used_bytes = r.opt_unsigned<std::uint64_t>("memory_used_bytes");
    g.memory_free_bytes = r.opt_unsigned<std::uint64_t>("memory_free_bytes");
    g.memory_reserved_bytes = r.opt_unsigned<std::uint64_t>("memory_reserved_bytes");
    g.temperature_celsius = r.opt_number("temperature_celsius");
    g.power_watts = r.opt_number("power_watts");
    g.power_limit_watts = r.opt_number("power_limit_watts");
    g.sm_clock_mhz = r.opt_unsigned<unsigned>("sm_clock_mhz");
    g.sm_clock_max_mhz = r.opt_unsigned<unsigned>("sm_clock_max_mhz");
    g.memory_clock_mhz = r.opt_unsigned<unsigned>("memory_clock_mhz");
    g.memory_clock_max_mhz = r.opt_unsigned<unsigned>("memory_clock_max_mhz");
    if (r.has("throttle_reasons")) {
        std::vector<std::string> reasons;
        for (const json& v : r.array("throttle_reasons")) {
            if (!v.is_string()) r.fail("throttle_reasons", "an array of strings");
            reasons.push_back(v.get<std::string>());
        }
        g.throttle_reasons = std::move(reasons);
    }
    g.pcie_generation = r.opt_unsigned<unsigned>("pcie_generation");
    g.pcie_generation_max = r.opt_unsigned<unsigned>("pcie_generation_max");
    g.pcie_width = r.opt_unsigned<unsigned>("pcie_width");
    g.pcie_width_max = r.opt_unsigned<unsigned>("pcie_width_max");
    g.pcie_rx_bytes_per_second = r.opt_number("pcie_rx_bytes_per_second");
    g.pcie_tx_bytes_per_second = r.opt_number("pcie_tx_bytes_per_second");
    g.ecc_uncorrected_volatile = r.opt_unsigned<std::uint64_t>("ecc_uncorrected_volatile");
    g.ecc_corrected_volatile = r.opt_unsigned<std::uint64_t>("ecc_corrected_volatile");
    g.retired_pages = r.opt_unsigned<std::uint64_t>("retired_pages");
    g.remapped_rows_corrected = r.opt_unsigned<unsigned>("remapped_rows_corrected");
    g.remapped_rows_uncorrected = r.opt_unsigned<unsigned>("remapped_rows_uncorrected");
    g.remapping_pending = r.opt_boolean("remapping_pending");
    g.remapping_failed = r.opt_boolean("remapping_failed");
    g.fan_speed_percent = r.opt_number("fan_speed_percent");
    g.encoder_utilization_percent = r.opt_number("encoder_utilization_percent");
    g.decoder_utilization_percent = r.opt_number("decoder_utilization_percent");
    g.nvlink_links_active = r.opt_unsigned<unsigned>("nvlink_links_active");
    g.nvlink_rx_bytes_per_second = r.opt_number("nvlink_rx_bytes_per_second");
    g.nvlink_tx_bytes_per_second = r.opt_number("nvlink_tx_bytes_per_second");
    g.energy_joules_total = r.opt_number("energy_joules_total");
    g.pcie_replay_total = r.opt_unsigned<std::uint64_t>("pcie_replay_total");
    g.persistence_mode = r.opt_boolean("persistence_mode");
    g.compute_mode = r.opt_string("compute_mode");
    g.mig_mode = r.opt_boolean("mig_mode");
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
            const json& pids = m.array("pids");
            for (std::size_t j = 0; j < pids.size(); ++j) {
                if (!pids[j].is_number_unsigned() || pids[j].get<std::uint64_t>() > 0xFFFFFFFFu)
                    m.fail("pids", "an array of pids");
                mi.pids.push_back(pids[j].get<std::uint32_t>());
            }
            g.mig_instances.push_back(std::move(mi));
        }
    }
    g.sm_activity_percent = r.opt_number("sm_activity_percent");
    g.tensor_activity_percent = r.opt_number("tensor_activity_percent");
    const json& procs = r.array("processes");
    for (std::size_t i = 0; i < procs.size(); ++i) {
        Reader p(procs[i], r.item("processes", i));
        GpuProcess gp;
        gp.pid = p.unsigned_value<std::uint32_t>("pid");
        gp.container_pid = p.opt_unsigned<std::uint32_t>("container_pid");
        gp.local_pid = p.opt_unsigned<std::uint32_t>("local_pid");
        gp.type = p.string("type");
        gp.used_memory_bytes = p.opt_unsigned<std::uint64_t>("used_memory_bytes");
        gp.sm_utilization_percent = p.opt_number("sm_utilization_percent");
        gp.gpu_instance_id = p.opt_unsigned<unsigned>("gpu_instance_id");
        gp.compute_instance_id = p.opt_unsigned<unsigned>("compute_instance_id");
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

Snapshot read_snapshot(const json& doc) {
    Reader r(doc, "");
    Snapshot s;
    const auto time = parse_rfc3339(r.string("time"));
    if (!time) r.fail("time", "an RFC 3339 time");
    s.time_unix_ms = *time;
    s.monotonic_seconds = r.opt_number("monotonic_seconds");
    if (s.monotonic_seconds && *s.monotonic_seconds < 0) r.fail("monotonic_seconds", "a time that is not negative");
    s.interval_seconds = r.number("interval_seconds");

    Reader host = r.object("host");
    s.host.hostname = host.string("hostname");
    s.host.kernel = host.string("kernel");
    // (the advice derives worker counts from it: a recording must not ask for 4294967294 workers)
    s.host.cpu_count = host.unsigned_value<unsigned>("cpu_count", kMaxCpus);
    s.host.uptime_seconds = host.opt_number("uptime_seconds");

    Reader cpu = r.object("cpu");
    read_cpu_times(cpu, s.cpu.total);
    s.cpu.seconds_total = read_cpu_seconds(cpu);
    const json& load = cpu.array("load_average");
    for (std::size_t i = 0; i < 3 && i < load.size(); ++i) {
        if (!load[i].is_number()) cpu.fail("load_average", "an array of numbers");
        s.cpu.load_average[i] = load[i].get<double>();
    }
    s.cpu.context_switches_per_second = cpu.opt_number("context_switches_per_second");
    s.cpu.context_switches_total = cpu.opt_unsigned<std::uint64_t>("context_switches_total");
    s.cpu.runnable_tasks = cpu.unsigned_value<unsigned>("runnable_tasks");
    s.cpu.blocked_tasks = cpu.unsigned_value<unsigned>("blocked_tasks");
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
    s.memory.total_bytes = mem.unsigned_value<std::uint64_t>("total_bytes");
    s.memory.available_bytes = mem.unsigned_value<std::uint64_t>("available_bytes");
    s.memory.used_bytes = mem.unsigned_value<std::uint64_t>("used_bytes");
    s.memory.free_bytes = mem.unsigned_value<std::uint64_t>("free_bytes");
    s.memory.cached_bytes = mem.unsigned_value<std::uint64_t>("cached_bytes");
    s.memory.buffers_bytes = mem.unsigned_value<std::uint64_t>("buffers_bytes");
    s.memory.shared_bytes = mem.unsigned_value<std::uint64_t>("shared_bytes");
    s.memory.shm_total_bytes = mem.opt_unsigned<std::uint64_t>("shm_total_bytes");
    s.memory.shm_used_bytes = mem.opt_unsigned<std::uint64_t>("shm_used_bytes");

    Reader swap = r.object("swap");
    s.swap.total_bytes = swap.unsigned_value<std::uint64_t>("total_bytes");
    s.swap.used_bytes = swap.unsigned_value<std::uint64_t>("used_bytes");
    s.swap.in_bytes_per_second = swap.opt_number("in_bytes_per_second");
    s.swap.out_bytes_per_second = swap.opt_number("out_bytes_per_second");
    s.swap.major_faults_per_second = swap.opt_number("major_faults_per_second");
    s.swap.in_bytes_total = swap.opt_unsigned<std::uint64_t>("in_bytes_total");
    s.swap.out_bytes_total = swap.opt_unsigned<std::uint64_t>("out_bytes_total");
    s.swap.major_faults_total = swap.opt_unsigned<std::uint64_t>("major_faults_total");
    s.swap.oom_kill_total = swap.opt_unsigned<std::uint64_t>("oom_kill_total");

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
        x.read_bytes_per_second = d.opt_number("read_bytes_per_second");
        x.write_bytes_per_second = d.opt_number("write_bytes_per_second");
        x.reads_per_second = d.opt_number("reads_per_second");
        x.writes_per_second = d.opt_number("writes_per_second");
        x.busy_percent = d.opt_number("busy_percent");
        x.average_wait_ms = d.opt_number("average_wait_ms");
        x.read_bytes_total = d.opt_unsigned<std::uint64_t>("read_bytes_total").value_or(0);
        x.written_bytes_total = d.opt_unsigned<std::uint64_t>("written_bytes_total").value_or(0);
        x.reads_total = d.opt_unsigned<std::uint64_t>("reads_total").value_or(0);
        x.writes_total = d.opt_unsigned<std::uint64_t>("writes_total").value_or(0);
        x.io_time_seconds_total = d.opt_number("io_time_seconds_total").value_or(0);
        x.stacked = d.opt_boolean("stacked").value_or(false);
        s.disks.push_back(std::move(x));
    }
    const json& nets = r.array("networks");
    for (std::size_t i = 0; i < nets.size(); ++i) {
        Reader n(nets[i], r.item("networks", i));
        NetworkStats x;
        x.name = n.string("name");
        x.rx_bytes_per_second = n.opt_number("rx_bytes_per_second");
        x.tx_bytes_per_second = n.opt_number("tx_bytes_per_second");
        x.speed_mbps = n.opt_unsigned<std::uint64_t>("speed_mbps");
        x.rx_bytes_total = n.opt_unsigned<std::uint64_t>("rx_bytes_total").value_or(0);
        x.tx_bytes_total = n.opt_unsigned<std::uint64_t>("tx_bytes_total").value_or(0);
        s.networks.push_back(std::move(x));
    }

    s.gpu_status = r.string("gpu_status");
    s.gpu_driver_version = r.opt_string("gpu_driver_version");
    s.gpu_nvml_version = r.opt_string("gpu_nvml_version");
    s.gpu_cuda_driver_version = r.opt_string("gpu_cuda_driver_version");
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

Result<Window> read_snapshot_stream(std::istream& in, const std::string& path) {
    Window w;
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

}  // namespace baton
