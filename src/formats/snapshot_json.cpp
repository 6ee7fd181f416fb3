#include "formats/snapshot_json.hpp"

#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "formats/snapshot_fields.hpp"

namespace baton::formats {

namespace {

void write_cpu_times(JsonWriter& w, const CpuTimes& t) {
    write_fields(w, cpu_time_fields(), t);
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

void write_pids(JsonWriter& w, const char* key, const std::vector<std::uint32_t>& pids) {
    w.key(key);
    w.begin_array();
    for (std::uint32_t pid : pids) w.value(pid);
    w.end_array();
}

void write_gpu(JsonWriter& w, const GpuInfo& g) {
    w.begin_object();
    w.field("index", g.index);
    w.field("uuid", g.uuid);
    w.field("name", g.name);
    w.field("pci_bus_id", g.pci_bus_id);
    if (g.lost) w.field("lost", true);
    write_fields(w, gpu_fields(), g);
    if (g.throttle_reasons) {
        w.key("throttle_reasons");
        w.begin_array();
        for (const auto& r : *g.throttle_reasons) w.value(r);
        w.end_array();
    }
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
            write_pids(w, "pids", m.pids);
            w.end_object();
        }
        w.end_array();
    }
    if (g.xid_errors) {
        w.key("xid_errors");
        w.begin_array();
        for (const XidCount& x : *g.xid_errors) {
            w.begin_object();
            w.field("xid", x.xid);
            w.field("count", x.count);
            w.field("last_time", rfc3339_utc(x.last_unix_ms));
            w.end_object();
        }
        w.end_array();
    }
    w.key("processes");
    w.begin_array();
    for (const GpuProcess& p : g.processes) {
        w.begin_object();
        write_fields(w, gpu_process_fields(), p);
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
    if (p.job.kind != JobKind::none) {
        // From the cgroup, like it: cached with the rest of the identity.
        w.key("job");
        w.begin_object();
        w.field("kind", enum_name(p.job.kind));
        w.field("id", p.job.id);
        if (!p.job.step.empty()) w.field("step", p.job.step);
        if (!p.job.container_id.empty()) w.field("container_id", p.job.container_id);
        if (!p.job.runtime.empty()) w.field("runtime", p.job.runtime);
        w.end_object();
    }
    w.optional_field("container_pid", p.container_pid);
}

void write_indices(JsonWriter& w, const char* key, const std::vector<unsigned>& v) {
    w.key(key);
    w.begin_array();
    for (unsigned i : v) w.value(i);
    w.end_array();
}

void write_job(JsonWriter& w, const JobInfo& j) {
    w.begin_object();
    w.field("kind", enum_name(j.kind));
    w.field("id", j.id);
    w.field("label", j.label);
    // Names only where known.
    for (const auto& [key, value] :
         {std::pair{"name", &j.name}, std::pair{"user", &j.user}, std::pair{"account", &j.account},
          std::pair{"partition", &j.partition}, std::pair{"namespace", &j.pod_namespace},
          std::pair{"container", &j.container}, std::pair{"names_from", &j.names_from}})
        if (!value->empty()) {
            w.key(key);
            w.value(*value);
        }
    write_pids(w, "pids", j.pids);
    write_indices(w, "gpus", j.gpus);
    if (!j.allocated_gpus.empty()) write_indices(w, "allocated_gpus", j.allocated_gpus);
    w.optional_field("allocated_cpus", j.allocated_cpus);
    w.optional_field("allocated_memory_bytes", j.allocated_memory_bytes);
    w.optional_field("time_limit_seconds", j.time_limit_seconds);
    w.optional_field("start_time_unix", j.start_time_unix);
    w.end_object();
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
    write_fields(w, snapshot_fields(), s);

    w.key("host");
    w.begin_object();
    write_fields(w, host_fields(), s.host);
    w.end_object();

    w.key("cpu");
    w.begin_object();
    write_cpu_times(w, s.cpu.total);
    write_cpu_seconds(w, s.cpu.seconds_total);
    w.key("load_average");
    w.begin_array();
    for (double l : s.cpu.load_average) w.value(l);
    w.end_array();
    write_fields(w, cpu_fields(), s.cpu);
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
    write_fields(w, memory_fields(), s.memory);
    w.end_object();

    w.key("swap");
    w.begin_object();
    write_fields(w, swap_fields(), s.swap);
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
        write_fields(w, disk_fields(), d);
        w.end_object();
    }
    w.end_array();

    // Absent when not read (a snapshot from before, a fixture's /proc without mountinfo).
    if (!s.filesystems.empty()) {
        w.key("filesystems");
        w.begin_array();
        for (const FilesystemStats& f : s.filesystems) {
            w.begin_object();
            w.field("mount_point", f.mount_point);
            write_fields(w, filesystem_fields(), f);
            write_pids(w, "writer_pids", f.writer_pids);
            w.end_object();
        }
        w.end_array();
    }

    w.key("networks");
    w.begin_array();
    for (const NetworkStats& n : s.networks) {
        w.begin_object();
        w.field("name", n.name);
        write_fields(w, network_fields(), n);
        w.end_object();
    }
    w.end_array();

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
    w.key("jobs");
    w.begin_array();
    for (const JobInfo& j : s.jobs) write_job(w, j);
    w.end_array();
    w.end_object();
    w.finish();
}

}  // namespace baton::formats
