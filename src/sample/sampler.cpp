#include "sample/sampler.hpp"

#include <algorithm>
#include <sys/resource.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "sample/process_lookup.hpp"

namespace baton {

SamplerOptions SamplerOptions::from_config(const Config& c) {
    SamplerOptions o;
    o.proc_root = c.sample.proc_root;
    o.sys_root = c.sample.sys_root;
    o.shm_path = c.sample.shm_path;
    o.dev_root = c.sample.dev_root;
    o.skip_idle_processes = c.sample.skip_idle_processes;
    o.filesystems = c.sample.filesystems;
    o.jobs = c.jobs.attribution;
    o.scontrol = c.jobs.scontrol;
    o.kubelet_socket = c.jobs.kubelet_socket;
    o.nvml.library_path = c.gpu.nvml_library;
    o.nvml.deadline_ms = c.gpu.nvml_deadline_ms;
    o.nvml.pcie_interval_seconds = c.gpu.pcie_interval_seconds;
    o.nvml.xid_events = c.gpu.xid_events;
    return o;
}

void raise_open_file_limit() {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    rlim_t want = std::min<rlim_t>(rl.rlim_max, rlim_t{1} << 20);
    if (rl.rlim_cur < want) {
        rl.rlim_cur = want;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

Sampler::Sampler(SamplerOptions options)
    : options_(std::move(options)), system_(os::Roots{options_.proc_root, options_.sys_root, options_.shm_path}) {
    if (options_.processes) {
        raise_open_file_limit();
        processes_ = std::make_unique<os::ProcessTable>(options_.proc_root, options_.skip_idle_processes,
                                                        options_.trust_idle_after_seconds);
        if (options_.jobs) {
            jobs::JobTableOptions j;
            j.proc_root = options_.proc_root;
            j.scontrol = options_.scontrol;
            j.kubelet_socket = options_.kubelet_socket;
            jobs_ = std::make_unique<jobs::JobTable>(std::move(j));
        }
    }
    if (options_.gpus) gpu_ = make_nvml_backend(options_.nvml);
    if (options_.filesystems) {
        filesystems_ = std::make_unique<os::FilesystemSpace>(options_.proc_root);
        if (options_.processes) written_ = std::make_unique<os::WrittenPaths>(options_.proc_root);
    }
}

Sampler::~Sampler() = default;

void Sampler::read_once(Snapshot& snap) {
    double now = monotonic_seconds();
    snap.time_unix_ms = unix_millis();
    snap.monotonic_seconds = now;
    snap.interval_seconds = last_time_ < 0 ? 0 : now - last_time_;
    last_time_ = now;
    if (gpu_) gpu_->begin(now);  // NVML works on its own thread while /proc is read
    system_.read(now, snap);
    snap.processes_collected = processes_ != nullptr;
    if (processes_)
        processes_->scan(now, system_.boot_time_seconds(), snap.processes,
                         os::ScanHints{system_.forks_since_boot(), system_.reclaim_activity(), system_.tasks_alive()});
    else
        snap.processes.clear();
    if (gpu_) {
        const GpuReading& r = gpu_->end();
        snap.gpu_state = r.state;
        snap.gpu_status = r.status;
        snap.gpu_driver_version = r.driver_version;
        snap.gpu_nvml_version = r.nvml_version;
        snap.gpu_cuda_driver_version = r.cuda_driver_version;
        snap.gpus = r.gpus;  // copy-assign: the snapshot's GPU storage is reused tick to tick
    } else {
        snap.gpu_state = GpuState::disabled;
        snap.gpu_status = "GPU sampling disabled";
        snap.gpu_driver_version.reset();
        snap.gpu_nvml_version.reset();
        snap.gpu_cuda_driver_version.reset();
        snap.gpus.clear();
    }
    join_gpu_processes(snap);
    // GPU processes this pid namespace does not see by pid: tie them by the device files held open.
    const bool unmatched = std::any_of(snap.gpus.begin(), snap.gpus.end(), [](const GpuInfo& g) {
        return std::any_of(g.processes.begin(), g.processes.end(), [](const GpuProcess& p) { return !p.local_pid; });
    });
    if (unmatched && processes_) {
        if (!device_files_) device_files_ = std::make_unique<os::GpuDeviceFiles>(options_.proc_root, options_.dev_root);
        // baton itself holds the GPUs' files through NVML (no CUDA context), and its own
        // descriptor table is the largest there is (three per process it watches).
        static const std::vector<unsigned> none;
        const std::uint32_t self = options_.proc_root == "/proc" ? static_cast<std::uint32_t>(getpid()) : 0;
        join_gpu_processes_by_device_files(snap, [&](const ProcessInfo& p) -> const std::vector<unsigned>& {
            if (p.pid == self) return none;
            return device_files_->minors(p.pid, p.start_time_ms, p.cpu_seconds_total, now);
        });
        device_files_->forget_older_than(now - 2 * os::GpuDeviceFiles::refresh_seconds);
    }
    if (filesystems_) {
        filesystems_->fill(now, snap.filesystems);
        if (written_ && now >= writers_due_) {
            mark_filesystem_writers(
                snap, filesystems_->mounts(), options_.job_roots, [&](const ProcessInfo& p) -> const auto& {
                    return written_->paths(p.pid, p.start_time_ms, now);
                });
            written_->forget_older_than(now - 2 * os::WrittenPaths::refresh_seconds);
            writers_.clear();
            for (const FilesystemStats& f : snap.filesystems)
                if (!f.writer_pids.empty()) writers_.emplace(f.mount_point, f.writer_pids);
            writers_due_ = now + kWritersSeconds;
        } else if (written_) {
            // Between passes, the last pass's writers that are still here.
            for (FilesystemStats& f : snap.filesystems) {
                const auto it = writers_.find(f.mount_point);
                if (it == writers_.end()) continue;
                for (std::uint32_t pid : it->second)
                    if (find_process(snap, pid)) f.writer_pids.push_back(pid);
            }
        }
    } else {
        snap.filesystems.clear();
    }
    if (jobs_)
        jobs_->update(snap, now);
    else
        snap.jobs.clear();
}

void Sampler::settle_jobs(Snapshot& snap, double seconds) {
    if (jobs_) jobs_->settle(snap, monotonic_seconds(), seconds);
}

void join_gpu_processes_by_device_files(Snapshot& snap,
                                        const std::function<const std::vector<unsigned>&(const ProcessInfo&)>& minors) {
    auto holds = [&](const ProcessInfo& p, unsigned minor) {
        if (p.name.empty() || p.command.rfind('[', 0) == 0) return false;  // kernel threads hold no files
        const std::vector<unsigned>& m = minors(p);
        return std::binary_search(m.begin(), m.end(), minor);
    };
    for (GpuInfo& g : snap.gpus) {
        if (!g.minor_number) continue;
        std::vector<GpuProcess*> unmatched;
        for (GpuProcess& gp : g.processes)
            if (!gp.local_pid) unmatched.push_back(&gp);
        if (unmatched.empty()) continue;
        // The processes here that hold this GPU's file and are not already NVML's by pid on it;
        // of a tree of holders, only the topmost (workers inherit the trainer's descriptors).
        std::vector<ProcessInfo*> holders;
        for (ProcessInfo& p : snap.processes) {
            if (std::find(p.gpu_indices.begin(), p.gpu_indices.end(), g.index) != p.gpu_indices.end()) continue;
            if (!holds(p, *g.minor_number)) continue;
            const ProcessInfo* parent = find_process(snap, p.ppid);
            if (parent && holds(*parent, *g.minor_number)) continue;
            holders.push_back(&p);
        }
        if (holders.empty()) continue;
        if (holders.size() == 1 && unmatched.size() == 1) {
            GpuProcess& gp = *unmatched.front();
            ProcessInfo& p = *holders.front();
            gp.local_pid = p.pid;
            if (gp.used_memory_bytes) p.gpu_memory_bytes = p.gpu_memory_bytes.value_or(0) + *gp.used_memory_bytes;
            p.gpu_indices.push_back(g.index);
            continue;
        }
        for (ProcessInfo* p : holders) {  // they use the GPU; whose memory is whose is not known
            p->gpu_indices.push_back(g.index);
            p->gpu_memory_ambiguous = true;
        }
    }
}

void Sampler::take(Snapshot& snap) {
    if (!primed_) {
        primed_ = true;
        read_once(snap);
        sleep_seconds(options_.priming_seconds);
    }
    read_once(snap);
}

void mark_filesystem_writers(Snapshot& snap, const std::vector<os::Mount>& mounts,
                             const std::vector<std::uint32_t>& roots,
                             const std::function<const std::vector<std::string>&(const ProcessInfo&)>& paths) {
    if (snap.filesystems.empty() || mounts.empty()) return;
    // The writers: GPU processes with their trees (a trainer's checkpoint thread or saver process),
    // and heavy writers of any kind; never every process (reading hundreds of fd tables a second).
    std::vector<const ProcessInfo*> writers;
    std::vector<bool> taken(snap.processes.size(), false);
    const auto is_root = [&](const ProcessInfo& p) {
        return !p.gpu_indices.empty() || std::find(roots.begin(), roots.end(), p.pid) != roots.end();
    };
    // A root's descendants, found by walking each process's parents up (the table is sorted by pid:
    // a binary search a step) with what each walk learns kept, so every process is settled once; no
    // tree is built (building one a pass was most of this function's cost). Only on a pass with a job
    // to follow (most of a desktop's passes have none).
    if (std::any_of(snap.processes.begin(), snap.processes.end(), is_root)) {
        enum : char { unknown, under_root, not_under };
        std::vector<char> state(snap.processes.size(), unknown);
        std::vector<std::size_t> chain;
        for (std::size_t i = 0; i < snap.processes.size(); ++i) {
            chain.clear();
            char found = not_under;
            for (std::size_t at = i;;) {
                if (state[at] != unknown) {
                    found = state[at];
                    break;
                }
                chain.push_back(at);
                if (is_root(snap.processes[at])) {
                    found = under_root;
                    break;
                }
                const ProcessInfo* parent = find_process(snap, snap.processes[at].ppid);
                // No parent here, or a loop (a pid reused between the reads of a table): the walk ends.
                if (!parent || parent == &snap.processes[at] || chain.size() > snap.processes.size()) break;
                at = static_cast<std::size_t>(parent - snap.processes.data());
            }
            for (std::size_t c : chain) state[c] = found;
        }
        for (std::size_t i = 0; i < snap.processes.size(); ++i) taken[i] = state[i] == under_root;
    }
    for (std::size_t i = 0; i < snap.processes.size(); ++i)
        if (taken[i] || snap.processes[i].write_bytes_per_second.value_or(0) > 1e6)
            writers.push_back(&snap.processes[i]);
    for (const ProcessInfo* p : writers)
        for (const std::string& path : paths(*p)) {
            const os::Mount* m = os::mount_of(mounts, path);
            if (!m) continue;
            for (FilesystemStats& f : snap.filesystems)
                if (f.mount_point == m->mount_point && (f.writer_pids.empty() || f.writer_pids.back() != p->pid))
                    f.writer_pids.push_back(p->pid);
        }
    for (FilesystemStats& f : snap.filesystems) {
        std::sort(f.writer_pids.begin(), f.writer_pids.end());
        f.writer_pids.erase(std::unique(f.writer_pids.begin(), f.writer_pids.end()), f.writer_pids.end());
    }
}

void join_gpu_processes(Snapshot& snap) {
    for (GpuInfo& g : snap.gpus) {
        for (GpuProcess& gp : g.processes) {
            ProcessInfo* p = find_process(snap, gp.pid);
            if (!p) continue;
            gp.local_pid = p->pid;
            gp.container_pid = p->container_pid;
            if (gp.used_memory_bytes) p->gpu_memory_bytes = p->gpu_memory_bytes.value_or(0) + *gp.used_memory_bytes;
            if (std::find(p->gpu_indices.begin(), p->gpu_indices.end(), g.index) == p->gpu_indices.end())
                p->gpu_indices.push_back(g.index);
        }
    }
}

}  // namespace baton
