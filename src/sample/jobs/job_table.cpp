#include "sample/jobs/job_table.hpp"

#include <algorithm>
#include <chrono>
#include <tuple>
#include <unistd.h>

#include "core/run_program.hpp"
#include "core/thread_name.hpp"

namespace baton::jobs {

namespace {

// Environments read per job before it is left to scontrol (a job of thousands of unreadable processes).
constexpr std::size_t kMaxEnvironReads = 64;

// A job is listed whatever its processes do (Slurm, pods, containers), or only while it uses a GPU.
bool always_listed(JobKind k) {
    return k == JobKind::slurm || k == JobKind::pod || k == JobKind::container;
}

void add_sorted(std::vector<unsigned>& v, unsigned x) {
    auto it = std::lower_bound(v.begin(), v.end(), x);
    if (it == v.end() || *it != x) v.insert(it, x);
}

// Slurm's GRES indices are the gres.conf device files' order; with File=/dev/nvidia[0-N] (and
// AutoDetect=nvml) that is the device minor number, which NVML gives each GPU.
std::vector<unsigned> gpus_by_minor(const Snapshot& snap, const std::vector<unsigned>& slurm_indices) {
    std::vector<unsigned> out;
    for (unsigned idx : slurm_indices)
        for (const GpuInfo& g : snap.gpus)
            if (g.minor_number.value_or(g.index) == idx) add_sorted(out, g.index);
    return out;
}

std::string_view short_host(std::string_view h) {
    return h.substr(0, h.find('.'));
}

}  // namespace

std::string job_label(const JobInfo& job) {
    switch (job.kind) {
        case JobKind::slurm:
            return "slurm:" + job.id;
        case JobKind::pod:
            if (!job.pod_namespace.empty() && !job.name.empty()) return "pod:" + job.pod_namespace + "/" + job.name;
            return "pod:" + job.id;
        case JobKind::container:
            return "container:" + job.id.substr(0, 12);
        case JobKind::service:
            return "service:" + job.id;
        case JobKind::user:
            return "user:" + (job.user.empty() ? job.id : job.user);
        case JobKind::none:
            break;
    }
    return {};
}

JobTable::JobTable(JobTableOptions options) : options_(std::move(options)) {}

JobTable::~JobTable() {
    {
        MutexLock lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    // A lookup in flight ends by its deadline.
    if (worker_.joinable()) worker_.join();
}

bool JobTable::read_environ(std::uint32_t pid, const std::string& job_id, SlurmNames& out) {
    if (!os::read_file(options_.proc_root + "/" + std::to_string(pid) + "/environ", buf_)) return false;
    SlurmNames n = parse_slurm_environ(buf_);
    // A task of this job carries its id; anything else (a process that outlived or escaped it) does not name it.
    if (n.job_id != job_id) return false;
    out = std::move(n);
    return true;
}

void JobTable::ask_kubelet(double now) {
    if (options_.kubelet_socket.empty() || kubelet_asked_ || now < kubelet_due_) return;
    kubelet_due_ = now + options_.kubelet_interval_seconds;
    // No kubelet on this node (the common case): not even a thread.
    if (access(options_.kubelet_socket.c_str(), F_OK) != 0) {
        pod_devices_.clear();
        return;
    }
    kubelet_asked_ = true;
    ask("");
}

void JobTable::ask(const std::string& job_id) {
    {
        MutexLock lock(mutex_);
        asked_.push_back(job_id);
        ++in_flight_;
    }
    if (!worker_.joinable()) worker_ = std::thread([this] { lookups(); });
    wake_.notify_all();
}

void JobTable::lookups() {
    name_this_thread("baton-jobs");
    UniqueLock lock(mutex_);
    while (true) {
        wake_.wait(lock, [&]() BATON_REQUIRES(mutex_) { return stopping_ || !asked_.empty(); });
        if (stopping_) return;
        const std::string id = asked_.front();
        asked_.pop_front();
        const std::string host = hostname_;
        lock.unlock();
        if (id.empty()) {
            Result<std::vector<PodDevice>> pods =
                list_pod_resources(options_.kubelet_socket, options_.kubelet_timeout_seconds);
            lock.lock();
            // A kubelet that fails or lies names nothing (the last good answer is dropped: it may be stale).
            kubelet_answer_ = pods.ok() ? std::move(*pods) : std::vector<PodDevice>{};
            --in_flight_;
            wake_.notify_all();
            continue;
        }
        SlurmNames n;
        Result<ProgramOutput> r =
            run_program({options_.scontrol, "show", "job", "-o", "-d", id}, "", options_.lookup_timeout_seconds);
        if (r.ok() && r->exit_status == 0 && !r->timed_out) n = parse_scontrol_job(r->out, host);
        if (n.job_id != id) n = {};
        lock.lock();
        answers_[id] = std::move(n);
        --in_flight_;
        wake_.notify_all();
    }
}

void JobTable::take_answers() {
    std::map<std::string, SlurmNames> answers;
    std::optional<std::vector<PodDevice>> pods;
    {
        MutexLock lock(mutex_);
        answers.swap(answers_);
        pods.swap(kubelet_answer_);
    }
    if (pods) {
        kubelet_asked_ = false;
        pod_devices_.clear();
        for (PodDevice& d : *pods) pod_devices_[d.device_id] = std::move(d);
    }
    for (auto& [id, names] : answers) {
        auto it = known_.find({JobKind::slurm, id});
        if (it == known_.end() || names.job_id.empty()) continue;  // a failure: asked again after retry_seconds
        // The environment, when read, was the task's own word; scontrol adds what it lacks (the limit, the start).
        if (it->second.from.empty()) {
            it->second.slurm = std::move(names);
            it->second.from = "scontrol";
        } else {
            it->second.slurm.time_limit_seconds = names.time_limit_seconds;
            it->second.slurm.start_time_unix = names.start_time_unix;
        }
    }
}

void JobTable::name_slurm(JobInfo& job, Known& k, double now) {
    // Each new process's environment until one names the job (slurmstepd itself, in the job's
    // cgroup before its tasks, carries slurmd's environment, not the job's).
    for (std::uint32_t pid : job.pids) {
        if (!k.from.empty() || k.environ_tried.size() >= kMaxEnvironReads) break;
        if (std::find(k.environ_tried.begin(), k.environ_tried.end(), pid) != k.environ_tried.end()) continue;
        k.environ_tried.push_back(pid);
        if (read_environ(pid, job.id, k.slurm)) k.from = "environ";
    }
    // scontrol once per job (again after a failure), also when the environment named it: only
    // Slurm knows the job's time limit and start.
    const bool answered = k.from == "scontrol" || k.slurm.time_limit_seconds || k.slurm.start_time_unix;
    if (!options_.scontrol.empty() && !answered && (k.asked_at < 0 || now - k.asked_at >= options_.retry_seconds)) {
        k.asked_at = now;
        ask(job.id);
    }
}

void JobTable::name_pod(JobInfo& job, Known& k, const Snapshot& snap) const {
    // The GPUs allocated to each pod: by the GPU's UUID, or one of its MIG devices'.
    const auto allocation = [&](const GpuInfo& g) -> const PodDevice* {
        auto it = pod_devices_.find(g.uuid);
        if (it != pod_devices_.end()) return &it->second;
        for (const MigInstance& m : g.mig_instances)
            if (auto mi = pod_devices_.find(m.uuid); mi != pod_devices_.end()) return &mi->second;
        return nullptr;
    };
    // A GPU its processes use names the pod (kept: the names outlive the GPU's use).
    for (const GpuInfo& g : snap.gpus) {
        if (!std::binary_search(job.gpus.begin(), job.gpus.end(), g.index)) continue;
        if (const PodDevice* d = allocation(g)) {
            if (k.pod.pod != d->pod || k.pod.pod_namespace != d->pod_namespace) k.pod = *d;
            break;
        }
    }
    if (k.pod.pod.empty()) return;
    job.name = k.pod.pod;
    job.pod_namespace = k.pod.pod_namespace;
    job.names_from = "kubelet";
    // Every GPU allocated to it; its container when one holds them all.
    std::string container;
    bool one_container = true;
    for (const GpuInfo& g : snap.gpus) {
        const PodDevice* d = allocation(g);
        if (!d || d->pod != k.pod.pod || d->pod_namespace != k.pod.pod_namespace) continue;
        add_sorted(job.allocated_gpus, g.index);
        if (container.empty()) container = d->container;
        one_container &= container == d->container;
    }
    if (one_container) job.container = container;
}

void JobTable::update(Snapshot& snap, double now) {
    take_answers();
    ask_kubelet(now);
    {
        MutexLock lock(mutex_);
        hostname_ = std::string(short_host(snap.host.hostname));
    }
    snap.jobs.clear();
    std::map<Key, std::size_t> at;
    for (const ProcessInfo& p : snap.processes) {
        if (p.job.kind == JobKind::none) continue;
        Key key{p.job.kind, p.job.id};
        auto [it, fresh] = at.try_emplace(key, snap.jobs.size());
        if (fresh) {
            JobInfo j;
            j.kind = p.job.kind;
            j.id = p.job.id;
            j.user = p.user;
            snap.jobs.push_back(std::move(j));
        }
        JobInfo& j = snap.jobs[it->second];
        j.pids.push_back(p.pid);
        for (unsigned g : p.gpu_indices) add_sorted(j.gpus, g);
    }
    std::erase_if(snap.jobs, [](const JobInfo& j) { return !always_listed(j.kind) && j.gpus.empty(); });
    for (JobInfo& j : snap.jobs) {
        Known& k = known_[{j.kind, j.id}];
        k.last_seen = now;
        if (j.kind == JobKind::slurm) {
            name_slurm(j, k, now);
            const SlurmNames& n = k.slurm;
            if (!n.name.empty()) j.name = n.name;
            if (!n.user.empty()) j.user = n.user;
            j.account = n.account;
            j.partition = n.partition;
            j.allocated_cpus = n.cpus;
            j.allocated_memory_bytes = n.memory_bytes;
            j.time_limit_seconds = n.time_limit_seconds;
            j.start_time_unix = n.start_time_unix;
            if (n.gpus) j.allocated_gpus = gpus_by_minor(snap, *n.gpus);
            j.names_from = k.from;
        } else if (j.kind == JobKind::pod) {
            name_pod(j, k, snap);
        } else if (j.kind == JobKind::service) {
            j.name = j.id;
        }
        j.label = job_label(j);
    }
    std::sort(snap.jobs.begin(), snap.jobs.end(),
              [](const JobInfo& a, const JobInfo& b) { return std::tie(a.kind, a.id) < std::tie(b.kind, b.id); });
    std::erase_if(known_, [&](const auto& e) { return now - e.second.last_seen > options_.forget_seconds; });
}

void JobTable::settle(Snapshot& snap, double now, double seconds) {
    {
        UniqueLock lock(mutex_);
        wake_.wait_for(lock, std::chrono::duration<double>(seconds),
                       [&]() BATON_REQUIRES(mutex_) { return in_flight_ == 0; });
    }
    update(snap, now);
}

}  // namespace baton::jobs
