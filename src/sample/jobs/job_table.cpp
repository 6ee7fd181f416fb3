#include "sample/jobs/job_table.hpp"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "core/run_program.hpp"

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
    UniqueLock lock(mutex_);
    while (true) {
        wake_.wait(lock, [&]() BATON_REQUIRES(mutex_) { return stopping_ || !asked_.empty(); });
        if (stopping_) return;
        const std::string id = asked_.front();
        asked_.pop_front();
        const std::string host = hostname_;
        lock.unlock();
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
    {
        MutexLock lock(mutex_);
        answers.swap(answers_);
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

void JobTable::update(Snapshot& snap, double now) {
    take_answers();
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
            if (n.gpus) j.allocated_gpus = gpus_by_minor(snap, *n.gpus);
            j.names_from = k.from;
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
