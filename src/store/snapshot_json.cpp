#include "store/snapshot_json.hpp"

#include "core/clock.hpp"
#include "core/json_writer.hpp"

namespace baton {

namespace {

void write_cpu_times(JsonWriter& w, const CpuTimes& t) {
    w.optional_field("utilization_percent", t.utilization_percent);
    w.optional_field("user_percent", t.user_percent);
    w.optional_field("system_percent", t.system_percent);
    w.optional_field("iowait_percent", t.iowait_percent);
    w.optional_field("steal_percent", t.steal_percent);
    w.optional_field("idle_percent", t.idle_percent);
}

void write_cpu_seconds(JsonWriter& w, const std::optional<CpuSeconds>& s) {
    if (!s) return;
    w.key("seconds_total");
    w.begin_object();
    w.field("user", s->user);
    w.field("nice", s->nice);
    w.field("system", s->system);
    w.field("idle", s->idle);
    w.field("iowait", s->iowait);
    w.field("irq", s->irq);
    w.field("softirq", s->softirq);
    w.field("steal", s->steal);
    w.end_object();
}

void write_pressure_resource(JsonWriter& w, const char* name, const PressureResource& r) {
    w.key(name);
    w.begin_object();
    auto line = [&](const char* k, const std::optional<PressureLine>& l) {
        if (!l) return;
        w.key(k);
        w.begin_object();
        w.field("avg10", l->avg10);
        w.field("avg60", l->avg60);
        w.field("avg300", l->avg300);
        w.field("total_microseconds", l->total_us);
        w.end_object();
    };
    line("some", r.some);
    line("full", r.full);
    w.end_object();
}

void write_gpu(JsonWriter& w, const GpuInfo& g) {
    w.begin_object();
    w.field("index", g.index);
    w.field("uuid", g.uuid);
    w.field("name", g.name);
    w.field("pci_bus_id", g.pci_bus_id);
    w.optional_field("minor_number", g.minor_number);
    w.field("stale", g.stale);
    w.optional_field("error", g.error);
    if (g.lost) w.field("lost", true);
    w.optional_field("utilization_percent", g.utilization_percent);
    w.optional_field("memory_utilization_percent", g.memory_utilization_percent);
    w.optional_field("memory_total_bytes", g.memory_total_bytes);
    w.optional_field("memory_used_bytes", g.memory_used_bytes);
    w.optional_field("memory_free_bytes", g.memory_free_bytes);
    w.optional_field("memory_reserved_bytes", g.memory_reserved_bytes);
    w.optional_field("temperature_celsius", g.temperature_celsius);
    w.optional_field("power_watts", g.power_watts);
    w.optional_field("power_limit_watts", g.power_limit_watts);
    w.optional_field("sm_clock_mhz", g.sm_clock_mhz);
    w.optional_field("sm_clock_max_mhz", g.sm_clock_max_mhz);
    w.optional_field("memory_clock_mhz", g.memory_clock_mhz);
    w.optional_field("memory_clock_max_mhz", g.memory_clock_max_mhz);
    if (g.throttle_reasons) {
        w.key("throttle_reasons");
        w.begin_array();
        for (const auto& r : *g.throttle_reasons) w.value(r);
        w.end_array();
    }
    w.optional_field("pcie_generation", g.pcie_generation);
    w.optional_field("pcie_generation_max", g.pcie_generation_max);
    w.optional_field("pcie_width", g.pcie_width);
    w.optional_field("pcie_width_max", g.pcie_width_max);
    w.optional_field("pcie_rx_bytes_per_second", g.pcie_rx_bytes_per_second);
    w.optional_field("pcie_tx_bytes_per_second", g.pcie_tx_bytes_per_second);
    w.optional_field("ecc_uncorrected_volatile", g.ecc_uncorrected_volatile);
    w.optional_field("ecc_corrected_volatile", g.ecc_corrected_volatile);
    w.optional_field("retired_pages", g.retired_pages);
    w.optional_field("remapped_rows_corrected", g.remapped_rows_corrected);
    w.optional_field("remapped_rows_uncorrected", g.remapped_rows_uncorrected);
    w.optional_field("remapping_pending", g.remapping_pending);
    w.optional_field("remapping_failed", g.remapping_failed);
    w.optional_field("fan_speed_percent", g.fan_speed_percent);
    w.optional_field("encoder_utilization_percent", g.encoder_utilization_percent);
    w.optional_field("decoder_utilization_percent", g.decoder_utilization_percent);
    w.optional_field("nvlink_links_active", g.nvlink_links_active);
    w.optional_field("nvlink_rx_bytes_per_second", g.nvlink_rx_bytes_per_second);
    w.optional_field("nvlink_tx_bytes_per_second", g.nvlink_tx_bytes_per_second);
    w.optional_field("energy_joules_total", g.energy_joules_total);
    w.optional_field("pcie_replay_total", g.pcie_replay_total);
    w.optional_field("persistence_mode", g.persistence_mode);
    w.optional_field("compute_mode", g.compute_mode);
    w.optional_field("mig_mode", g.mig_mode);
    if (g.mig_mode.value_or(false)) {
        w.key("mig_instances");
        w.begin_array();
        for (const MigInstance& m : g.mig_instances) {
            w.begin_object();
            w.field("gpu_instance_id", m.gpu_instance_id);
            w.field("compute_instance_id", m.compute_instance_id);
            w.field("uuid", m.uuid);
            w.field("name", m.name);
            w.optional_field("memory_total_bytes", m.memory_total_bytes);
            w.optional_field("memory_used_bytes", m.memory_used_bytes);
            w.key("pids");
            w.begin_array();
            for (std::uint32_t pid : m.pids) w.value(pid);
            w.end_array();
            w.end_object();
        }
        w.end_array();
    }
    w.optional_field("sm_activity_percent", g.sm_activity_percent);
    w.optional_field("tensor_activity_percent", g.tensor_activity_percent);
    w.key("processes");
    w.begin_array();
    for (const GpuProcess& p : g.processes) {
        w.begin_object();
        w.field("pid", p.pid);
        w.optional_field("container_pid", p.container_pid);
        w.optional_field("local_pid", p.local_pid);
        w.field("type", p.type);
        w.optional_field("used_memory_bytes", p.used_memory_bytes);
        w.optional_field("sm_utilization_percent", p.sm_utilization_percent);
        w.optional_field("gpu_instance_id", p.gpu_instance_id);
        w.optional_field("compute_instance_id", p.compute_instance_id);
        w.end_object();
    }
    w.end_array();
    w.end_object();
}

// The members that describe who a process is. They change only when the process does
// (exec, setuid), and escaping the command line plus formatting the start time are most of
// the JSON view's cost, so the encoder keeps them pre-encoded per process.
void write_identity(JsonWriter& w, const ProcessInfo& p) {
    w.field("uid", p.uid);
    w.field("user", p.user);
    w.field("name", p.name);
    w.field("command", p.command);
    w.field("start_time", rfc3339_utc(p.start_time_ms));
    w.field("cgroup", p.cgroup);
    w.optional_field("container_pid", p.container_pid);
}

// `id` is the cached identity for this pid (refilled here when stale), or null for none.
void write_process(JsonWriter& w, const ProcessInfo& p, SnapshotJsonEncoder::Identity* id) {
    w.begin_object();
    w.field("pid", p.pid);
    w.field("ppid", p.ppid);
    w.field("state", std::string_view(&p.state, 1));
    if (id) {
        const bool valid = id->filled && id->pid == p.pid && id->start_time_ms == p.start_time_ms && id->uid == p.uid &&
                           id->container_pid == p.container_pid && id->name == p.name && id->command == p.command &&
                           id->user == p.user && id->cgroup == p.cgroup;
        if (!valid) {
            id->filled = true;
            id->pid = p.pid;
            id->start_time_ms = p.start_time_ms;
            id->uid = p.uid;
            id->container_pid = p.container_pid;
            id->name = p.name;
            id->command = p.command;
            id->user = p.user;
            id->cgroup = p.cgroup;
            id->members.clear();
            JsonWriter iw(id->members);
            write_identity(iw, p);
        }
        w.members(id->members);
    } else {
        write_identity(w, p);
    }
    w.optional_field("cpu_percent", p.cpu_percent);
    w.field("cpu_seconds_total", p.cpu_seconds_total);
    w.field("rss_bytes", p.rss_bytes);
    w.field("threads", p.threads);
    w.optional_field("read_bytes_per_second", p.read_bytes_per_second);
    w.optional_field("write_bytes_per_second", p.write_bytes_per_second);
    w.optional_field("gpu_memory_bytes", p.gpu_memory_bytes);
    if (!p.gpu_indices.empty()) {
        w.key("gpu_indices");
        w.begin_array();
        for (unsigned i : p.gpu_indices) w.value(i);
        w.end_array();
    }
    if (p.gpu_memory_ambiguous) w.field("gpu_memory_ambiguous", true);
    w.end_object();
}

}  // namespace

void append_snapshot_json(const Snapshot& s, std::string& out) {
    SnapshotJsonEncoder().append(s, out);
}

void SnapshotJsonEncoder::append(const Snapshot& s, std::string& out) {
    JsonWriter w(out);
    w.begin_object();
    w.field("schema_version", kSnapshotSchemaVersion);
    w.field("time", rfc3339_utc(s.time_unix_ms));
    w.optional_field("monotonic_seconds", s.monotonic_seconds);
    w.field("interval_seconds", s.interval_seconds);

    w.key("host");
    w.begin_object();
    w.field("hostname", s.host.hostname);
    w.field("kernel", s.host.kernel);
    w.field("cpu_count", s.host.cpu_count);
    w.optional_field("uptime_seconds", s.host.uptime_seconds);
    w.end_object();

    w.key("cpu");
    w.begin_object();
    write_cpu_times(w, s.cpu.total);
    write_cpu_seconds(w, s.cpu.seconds_total);
    w.key("load_average");
    w.begin_array();
    for (double l : s.cpu.load_average) w.value(l);
    w.end_array();
    w.optional_field("context_switches_per_second", s.cpu.context_switches_per_second);
    w.optional_field("context_switches_total", s.cpu.context_switches_total);
    w.field("runnable_tasks", s.cpu.runnable_tasks);
    w.field("blocked_tasks", s.cpu.blocked_tasks);
    w.key("cores");
    w.begin_array();
    for (const CpuCore& c : s.cpu.cores) {
        w.begin_object();
        w.field("id", c.id);
        write_cpu_times(w, c.times);
        write_cpu_seconds(w, c.seconds_total);
        w.end_object();
    }
    w.end_array();
    w.end_object();

    w.key("memory");
    w.begin_object();
    w.field("total_bytes", s.memory.total_bytes);
    w.field("available_bytes", s.memory.available_bytes);
    w.field("used_bytes", s.memory.used_bytes);
    w.field("free_bytes", s.memory.free_bytes);
    w.field("cached_bytes", s.memory.cached_bytes);
    w.field("buffers_bytes", s.memory.buffers_bytes);
    w.field("shared_bytes", s.memory.shared_bytes);
    w.optional_field("shm_total_bytes", s.memory.shm_total_bytes);
    w.optional_field("shm_used_bytes", s.memory.shm_used_bytes);
    w.end_object();

    w.key("swap");
    w.begin_object();
    w.field("total_bytes", s.swap.total_bytes);
    w.field("used_bytes", s.swap.used_bytes);
    w.optional_field("in_bytes_per_second", s.swap.in_bytes_per_second);
    w.optional_field("out_bytes_per_second", s.swap.out_bytes_per_second);
    w.optional_field("major_faults_per_second", s.swap.major_faults_per_second);
    w.optional_field("in_bytes_total", s.swap.in_bytes_total);
    w.optional_field("out_bytes_total", s.swap.out_bytes_total);
    w.optional_field("major_faults_total", s.swap.major_faults_total);
    w.optional_field("oom_kill_total", s.swap.oom_kill_total);
    w.end_object();

    w.key("pressure");
    if (s.pressure.available) {
        w.begin_object();
        write_pressure_resource(w, "cpu", s.pressure.cpu);
        write_pressure_resource(w, "memory", s.pressure.memory);
        write_pressure_resource(w, "io", s.pressure.io);
        w.end_object();
    } else {
        w.null();
    }

    w.key("disks");
    w.begin_array();
    for (const DiskStats& d : s.disks) {
        w.begin_object();
        w.field("name", d.name);
        w.optional_field("read_bytes_per_second", d.read_bytes_per_second);
        w.optional_field("write_bytes_per_second", d.write_bytes_per_second);
        w.optional_field("reads_per_second", d.reads_per_second);
        w.optional_field("writes_per_second", d.writes_per_second);
        w.optional_field("busy_percent", d.busy_percent);
        w.optional_field("average_wait_ms", d.average_wait_ms);
        w.field("read_bytes_total", d.read_bytes_total);
        w.field("written_bytes_total", d.written_bytes_total);
        w.field("reads_total", d.reads_total);
        w.field("writes_total", d.writes_total);
        w.field("io_time_seconds_total", d.io_time_seconds_total);
        w.field("stacked", d.stacked);
        w.end_object();
    }
    w.end_array();

    w.key("networks");
    w.begin_array();
    for (const NetworkStats& n : s.networks) {
        w.begin_object();
        w.field("name", n.name);
        w.optional_field("rx_bytes_per_second", n.rx_bytes_per_second);
        w.optional_field("tx_bytes_per_second", n.tx_bytes_per_second);
        w.optional_field("speed_mbps", n.speed_mbps);
        w.field("rx_bytes_total", n.rx_bytes_total);
        w.field("tx_bytes_total", n.tx_bytes_total);
        w.end_object();
    }
    w.end_array();

    w.field("gpu_status", s.gpu_status);
    w.optional_field("gpu_driver_version", s.gpu_driver_version);
    w.optional_field("gpu_nvml_version", s.gpu_nvml_version);
    w.optional_field("gpu_cuda_driver_version", s.gpu_cuda_driver_version);
    w.key("gpus");
    w.begin_array();
    for (const GpuInfo& g : s.gpus) write_gpu(w, g);
    w.end_array();

    w.key("processes");
    if (s.processes_collected) {
        w.begin_array();
        // Merge walk: both lists are in pid order. Entries move to next_, which becomes the
        // cache (moving keeps their string buffers).
        next_.clear();
        std::size_t c = 0;
        for (const ProcessInfo& p : s.processes) {
            while (c < cache_.size() && cache_[c].pid < p.pid) ++c;
            next_.emplace_back();
            if (c < cache_.size() && cache_[c].pid == p.pid) next_.back() = std::move(cache_[c++]);
            write_process(w, p, &next_.back());
        }
        std::swap(cache_, next_);
        w.end_array();
    } else {
        w.null();
    }
    w.end_object();
    w.finish();
}

}  // namespace baton
