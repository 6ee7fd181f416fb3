#include "queue/queue_server.hpp"
#include "queue/queue_server_parts.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/printable.hpp"
#include "core/thread_name.hpp"
#include "diagnose/process_trees.hpp"
#include "hang/flight_recorder_dumps.hpp"
#include "hang/stack_shim.hpp"
#include "queue/gpu_memory_auto.hpp"
#include "queue/job_end.hpp"
#include "queue/job_env.hpp"
#include "queue/job_shim.hpp"
#include "queue/job_starter.hpp"
#include "queue/queue_socket.hpp"
#include "run/events_socket.hpp"
#include "sample/linux/pid_signal.hpp"
#include "store/run_owner.hpp"
#include "store/history_jobs.hpp"

namespace baton::queue {

namespace {

// The note a requeue after an out-of-memory death leaves: the next attempt gets BATON_OOM=1.
constexpr const char* kOomRetryNote = "out of memory: retry ";

std::string boot_id() {
    std::string id = read_small_file("/proc/sys/kernel/random/boot_id", 4096).value_or("");
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id;
}

QueueJob queue_job(const store::JobRecord& r, const JobRequest* req) {
    QueueJob q;
    q.id = r.id;
    q.state = r.state;
    q.priority = r.priority;
    if (req) {
        q.want = req->want;
        q.not_before_ms = req->not_before_ms;
        q.max_parallel = req->max_parallel;
        q.group = req->group;
    }
    q.array_id = r.array_id;
    q.after = r.after;
    q.after_ok = r.after_ok;
    q.gpus_held = r.gpus;
    q.cpus_held = r.cpus;
    return q;
}

}  // namespace

unsigned default_cpus(const Resources& want, const Pool& pool) {
    const unsigned cpus = static_cast<unsigned>(pool.cpus.size());
    const unsigned gpus = gpus_asked(want);
    if (gpus == 0 || pool.gpus.empty()) return cpus ? 1 : 0;
    const unsigned share = std::max(1u, cpus / static_cast<unsigned>(pool.gpus.size()));
    return std::min(cpus, share * gpus);
}

Result<std::unique_ptr<QueueServer>> QueueServer::open(QueueServerOptions options, SnapshotSource latest) {
    std::unique_ptr<QueueServer> s(new QueueServer());
    s->options_ = std::move(options);
    s->latest_ = std::move(latest);
    Result<store::History> h = store::History::open(s->options_.db_path, store::HistoryAccess::record);
    if (!h.ok()) return h.error();
    s->store_.emplace(std::move(*h));
    s->jobs_.set_store(&*s->store_);
    s->job_history_ = std::make_shared<store::SharedHistory>(s->options_.db_path);
    Result<std::vector<store::JobGroup>> groups = s->store_->queue_jobs().job_groups();
    if (!groups.ok()) return groups.error();
    for (store::JobGroup& g : *groups) s->groups_[g.name] = std::move(g);
    std::error_code ec;
    std::filesystem::create_directories(s->options_.jobs_dir, ec);
    if (ec) return make_error("cannot create " + s->options_.jobs_dir + ": " + ec.message());
    // Users reach their own job's directory only through the agent; root's jobs directory is
    // traversable (not listable) so the job's own processes can reach their directory's sockets.
    ::chmod(s->options_.jobs_dir.c_str(), ::geteuid() == 0 ? 0711 : 0700);
    if (::geteuid() == 0) {
        // So is the history's directory above it (the database itself stays 0600): a job's
        // processes send the Python hook's events to the socket in their job's directory.
        const std::string above = s->options_.jobs_dir.substr(0, s->options_.jobs_dir.rfind('/'));
        struct stat st {};
        if (!above.empty() && ::stat(above.c_str(), &st) == 0 && st.st_uid == 0) ::chmod(above.c_str(), 0711);
    }
    Result<int> fd = listen_unix(s->options_.socket_path, s->options_.socket_mode);
    if (!fd.ok()) return fd.error();
    s->listen_fd_ = *fd;
    if (s->options_.socket_group) {
        if (::chown(s->options_.socket_path.c_str(), 0, *s->options_.socket_group) != 0)
            return make_error("cannot give " + s->options_.socket_path + " to its group: " + std::strerror(errno));
    }
    ::fcntl(s->listen_fd_, F_SETFL, O_NONBLOCK);
    // The stack handler every job's Python loads, written once for all of them (a directory and two
    // files per job cost more than the rest of a short job's start on ext4); readable by the jobs of
    // other users when the agent is root. A failure is said in each job's start (no hang verdict).
    const std::string shim = s->options_.jobs_dir + "/python";
    if (Status st = hang::install_shim_dir(shim, ::geteuid() == 0 ? 0755 : 0700); st.ok())
        s->shim_dir_ = shim;
    else
        s->shim_dir_ = st.error();
    // Per-job cgroups where the agent was handed a subtree; CPU affinity alone elsewhere.
    s->cgroups_ = JobCgroups::open(s->options_.job_cgroups);
    std::fprintf(stderr, "baton: jobs get %s\n", s->cgroups_.status().c_str());
    s->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->wake_fd_ < 0) return make_error(std::string("cannot make an eventfd: ") + std::strerror(errno));
    return s;
}

QueueServer::~QueueServer() {
    stop();
    for (auto& [fd, c] : clients_) ::close(fd);
    for (auto& [id, r] : running_)
        if (r->pidfd >= 0) ::close(r->pidfd);
    if (listen_fd_ >= 0) {
        ::close(listen_fd_);
        // Only our own socket: another agent may have replaced it after we stopped answering.
        struct stat st {};
        if (::lstat(options_.socket_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
            ::unlink(options_.socket_path.c_str());
    }
    if (wake_fd_ >= 0) ::close(wake_fd_);
}

void QueueServer::start() {
    recover();
    watches_.start_hang_thread();
    thread_ = std::thread([this] {
        name_this_thread("baton-queue");
        loop();
    });
}

void QueueServer::stop() {
    {
        MutexLock lock(stop_mutex_);
        stopping_ = true;
    }
    if (wake_fd_ >= 0) {
        const std::uint64_t one = 1;
        (void)!::write(wake_fd_, &one, sizeof one);
    }
    if (thread_.joinable()) thread_.join();
    watches_.stop_hang_thread();
}

void QueueServer::on_tick(const diagnose::Window& window, std::vector<diagnose::Finding>& findings,
                          std::vector<diagnose::OtherJob>& usage) {
    for (diagnose::Finding& f : watches_.feed(window)) findings.push_back(std::move(f));
    if (!window.empty())
        for (diagnose::OtherJob& o : watches_.usage_jobs(window.back())) usage.push_back(std::move(o));
    std::vector<std::uint32_t> paused;
    {
        MutexLock lock(paused_mutex_);
        paused.assign(paused_roots_.begin(), paused_roots_.end());
    }
    if (!paused.empty() && !window.empty()) {
        std::set<std::string> held;  // "pid:N" of every process of a paused job
        for (const ProcessInfo* p : diagnose::process_trees(window.back(), paused))
            held.insert("pid:" + std::to_string(p->pid));
        findings.erase(std::remove_if(findings.begin(), findings.end(),
                                      [&](const diagnose::Finding& f) {
                                          return f.rule == "gpu_idle_held" && held.count(f.subject);
                                      }),
                       findings.end());
    }
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
}

void QueueServer::set_paused_root(std::uint32_t pid, bool paused) {
    MutexLock lock(paused_mutex_);
    if (paused)
        paused_roots_.insert(pid);
    else
        paused_roots_.erase(pid);
}

std::string QueueServer::attempt_dir(std::int64_t id, int attempt) const {
    return options_.jobs_dir + "/" + std::to_string(id) + "/attempt-" + std::to_string(attempt);
}

Pool QueueServer::current_pool(std::set<std::uint32_t>* queue_pids) {
    std::shared_ptr<const Snapshot> snap = latest_ ? latest_() : nullptr;
    Snapshot first;
    if (!snap) {
        // Before the agent's first sample: the GPUs as NVML says now, so that the first submits are
        // judged and started at once (processes are not known yet: a foreign one shows as such).
        first.gpu_status = "the agent has not read the GPUs yet";
        if (options_.nvml) {
            if (!gpus_) gpus_ = make_nvml_backend(*options_.nvml);
            const GpuReading& reading = gpus_->read(monotonic_seconds());
            first.gpu_state = reading.state;
            first.gpu_status = reading.status;
            first.gpus = reading.gpus;
        }
    }
    const Snapshot& s = snap ? *snap : first;
    std::vector<std::uint32_t> roots;
    for (const auto& [id, r] : running_) roots.push_back(static_cast<std::uint32_t>(r->pid));
    std::set<std::uint32_t> pids;
    for (const ProcessInfo* p : diagnose::process_trees(s, roots)) pids.insert(p->pid);
    Pool pool = make_pool(s, pids, options_.pool);
    for (const auto& [name, g] : groups_) pool.group_parallel[name] = g.parallel;
    if (queue_pids) *queue_pids = std::move(pids);
    return pool;
}

void QueueServer::recover() {
    Result<std::vector<store::JobRecord>> jobs = store_->queue_jobs().jobs(true);
    if (!jobs.ok()) {
        std::fprintf(stderr, "baton: cannot read the queue: %s\n", jobs.error().message.c_str());
        return;
    }
    const std::string boot = boot_id();
    for (store::JobRecord& j : *jobs) {
        jobs_.open()[j.id] = j;
        if (j.state != store::JobState::starting && j.state != store::JobState::running) continue;
        if (!j.pid) {
            // The agent ended between deciding the start and starting the supervisor, or before the
            // supervisor got its go: nothing of the job ran.
            jobs_.record_state(j.id, {store::JobState::starting}, store::JobState::queued, unix_millis());
            jobs_.open()[j.id].state = store::JobState::queued;
            continue;
        }
        store::RunOwner owner{static_cast<std::int64_t>(*j.pid), j.pid_start_ticks, j.boot_id};
        auto r = std::make_unique<Running>();
        r->pid = static_cast<pid_t>(*j.pid);
        r->dir = attempt_dir(j.id, j.attempt);
        r->start_ticks = j.pid_start_ticks.value_or(0);
        if (j.boot_id == boot && store::owner_alive(owner)) {
            // Without a pidfd (an old kernel) it is followed by its start time once a second; with
            // one, the pid was checked before the descriptor pinned it: check again now that it
            // cannot change.
            r->pidfd = os::open_pidfd(r->pid);
            if (r->pidfd < 0 || store::process_start_ticks(r->pid) == j.pid_start_ticks) {
                readopt(j, std::move(r));
                continue;
            }
            ::close(r->pidfd);
            r->pidfd = -1;
        }
        running_[j.id] = std::move(r);
        ended(j.id);
    }
}

// A supervisor the last agent left that still runs: followed and watched again from here, in a new
// run of the history (the killed agent's is marked interrupted), the hook's socket bound again
// where the job's processes send.
void QueueServer::readopt(const store::JobRecord& j, std::unique_ptr<Running> r) {
    std::fprintf(stderr, "baton: job %lld re-adopted (its supervisor, pid %d, still runs)\n",
                 static_cast<long long>(j.id), r->pid);
    auto watched = std::make_unique<WatchedJob>();
    const std::optional<std::string> text = read_small_file(r->dir + "/spec");
    Result<ShimSpec> spec = text ? parse_spec_json(*text) : Result<ShimSpec>(make_error("no spec"));
    std::vector<std::string> env = spec.ok() ? spec->env : std::vector<std::string>{};
    Result<run::EventsSocket> events = run::EventsSocket::open_at(r->dir + "/events");
    if (events.ok()) {
        if (spec.ok() && ::geteuid() == 0) ::chown(events->path().c_str(), spec->uid, spec->gid);
        watched->events.emplace(std::move(*events));
    }
    struct stat st {};
    if (::stat((r->dir + "/stacks").c_str(), &st) == 0 && S_ISDIR(st.st_mode)) watched->stacks_dir = r->dir + "/stacks";
    if (::stat((r->dir + "/memory").c_str(), &st) == 0 && S_ISDIR(st.st_mode)) watched->memory_dir = r->dir + "/memory";
    // (its stderr is scanned again from the start: an out-of-memory line before the kill still counts)
    watch(j, r->pid, env, std::move(watched));
    if (j.paused_ms) set_paused_root(static_cast<std::uint32_t>(r->pid), true);
    running_[j.id] = std::move(r);
}

// New clients on the listening socket; a connection whose peer cannot be told, or past 4096
// clients, is closed at once.
void QueueServer::accept_clients() {
    for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        Result<Peer> peer = peer_of(fd);
        if (!peer.ok() || clients_.size() >= 4096) {
            ::close(fd);
            continue;
        }
        auto c = std::make_unique<Client>();
        c->fd = fd;
        c->peer = *peer;
        clients_[fd] = std::move(c);
    }
}

// One client's turn: its whole request lines answered, its answers sent as far as the socket
// takes them, the connection closed when it is gone or done. True when a request was handled
// (the plan may change).
bool QueueServer::serve_client(const pollfd& p) {
    auto it = clients_.find(p.fd);
    if (it == clients_.end()) return false;
    Client& c = *it->second;
    bool handled = false;
    bool gone = (p.revents & (POLLERR | POLLNVAL)) != 0;
    if (!gone && (p.revents & (POLLIN | POLLHUP)) && !c.closing) {
        char buf[65536];
        const ssize_t got = ::read(c.fd, buf, sizeof buf);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
            gone = true;
        } else if (got > 0) {
            c.in.append(buf, static_cast<std::size_t>(got));
            std::size_t nl;
            while (!c.closing && (nl = c.in.find('\n')) != std::string::npos) {
                const std::string line = c.in.substr(0, nl);
                c.in.erase(0, nl + 1);
                handle(c, line);
                handled = true;
            }
            if (!c.closing && c.in.size() > kMaxRequestBytes) {
                c.out += refusal_line(
                    make_error("the request is longer than " + std::to_string(kMaxRequestBytes) + " bytes"));
                c.in.clear();
                c.closing = true;
            }
        }
    }
    if (!gone && !c.out.empty()) {
        const ssize_t put = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (put > 0)
            c.out.erase(0, static_cast<std::size_t>(put));
        else if (put < 0 && errno != EAGAIN && errno != EINTR)
            gone = true;
    }
    if (gone || (c.closing && c.out.empty())) {
        ::close(c.fd);
        clients_.erase(it);
    }
    return handled;
}

// Once a second: cgroups left to remove, and supervisors without a pidfd (an old kernel) looked
// at by their start time. True when one ended.
bool QueueServer::check_once_a_second() {
    cgroups_.sweep();
    callbacks_.check(monotonic_seconds());
    apply_idle_policy();
    std::vector<std::int64_t> gone;
    for (auto& [id, r] : running_)
        if (r->pidfd < 0 && store::process_start_ticks(r->pid) != std::optional<std::uint64_t>(r->start_ticks))
            gone.push_back(id);
    for (std::int64_t id : gone) ended(id);
    return !gone.empty();
}

void QueueServer::loop() {
    double next_check = monotonic_seconds() + 1;
    bool plan_due = true;
    for (;;) {
        {
            MutexLock lock(stop_mutex_);
            if (stopping_) break;
        }
        if (plan_due) {
            schedule();
            plan_due = false;
            link_runs();
        }
        // The listener, the wake-up, every client, every supervisor's pidfd.
        std::vector<pollfd> fds;
        fds.push_back({listen_fd_, POLLIN, 0});
        fds.push_back({wake_fd_, POLLIN, 0});
        for (auto& [fd, c] : clients_)
            fds.push_back({fd, static_cast<short>((c->closing ? 0 : POLLIN) | (c->out.empty() ? 0 : POLLOUT)), 0});
        const std::size_t first_job = fds.size();
        std::vector<std::int64_t> job_ids;
        for (auto& [id, r] : running_) {
            if (r->pidfd < 0) continue;
            fds.push_back({r->pidfd, POLLIN, 0});
            job_ids.push_back(id);
        }
        const int n = ::poll(fds.data(), fds.size(), 1000);
        if (n < 0 && errno != EINTR) break;
        if (fds[1].revents & POLLIN) {
            std::uint64_t v;
            (void)!::read(wake_fd_, &v, sizeof v);
            plan_due = true;
        }
        if (fds[0].revents & POLLIN) accept_clients();
        for (std::size_t i = 2; i < first_job; ++i) plan_due |= serve_client(fds[i]);
        for (std::size_t i = 0; i < job_ids.size(); ++i)
            if (fds[first_job + i].revents & (POLLIN | POLLHUP | POLLERR)) {
                ended(job_ids[i]);
                plan_due = true;
            }
        const double now = monotonic_seconds();
        if (now >= next_check) {
            next_check = now + 1;
            plan_due |= check_once_a_second();
        }
    }
}

void QueueServer::schedule() {
    std::vector<QueueJob> jobs;
    std::set<std::int64_t> have;
    for (const auto& [id, j] : jobs_.open()) {
        jobs.push_back(queue_job(j, jobs_.request_of(j)));
        have.insert(id);
    }
    // The jobs `after` names that are no longer open: their end decides.
    for (const auto& [id, j] : jobs_.open())
        for (std::int64_t a : j.after)
            if (have.insert(a).second) {
                Result<store::JobRecord> r = store_->queue_jobs().job(a);
                if (r.ok()) jobs.push_back(queue_job(*r, nullptr));  // (only its state counts)
            }
    std::map<std::string, unsigned> open;
    for (const auto& [id, j] : jobs_.open()) ++open[store::state_name(j.state)];
    metrics_.set_open(std::move(open));
    Pool pool = current_pool();
    last_pool_ = pool;
    Plan p = plan(jobs, pool, unix_millis());
    jobs_.waiting() = std::move(p.waiting);
    if (p.starts.empty()) return;
    std::vector<store::JobStartRecord> starts;
    for (const Start& s : p.starts) starts.push_back({s.job, s.gpus, s.cpus});
    Result<std::vector<std::int64_t>> moved = store_->queue_jobs().start_jobs(starts, unix_millis());
    if (!moved.ok()) {
        std::fprintf(stderr, "baton: cannot start jobs: %s\n", moved.error().message.c_str());
        return;
    }
    for (const Start& s : p.starts) {
        if (std::find(moved->begin(), moved->end(), s.job) == moved->end()) continue;
        store::JobRecord& j = jobs_.open()[s.job];
        j.state = store::JobState::starting;
        j.gpus = s.gpus;
        j.cpus = s.cpus;
        j.start_ms = unix_millis();
        launch(s.job);
    }
}

Status QueueServer::verify_gpus(const std::vector<std::string>& uuids) {
    if (uuids.empty() || !options_.nvml) return Ok{};
    if (!gpus_) gpus_ = make_nvml_backend(*options_.nvml);
    const GpuReading& reading = gpus_->read(monotonic_seconds());
    if (reading.status != "ok")
        return make_error(ErrorCode::unavailable,
                          "the GPUs could not be read just before the start: " + reading.status);
    std::set<std::uint32_t> queue_pids;
    current_pool(&queue_pids);
    if (std::optional<std::string> taken = foreign_gpu_process(uuids, reading.gpus, queue_pids))
        return make_error(*taken);
    return Ok{};
}

// A start that cannot happen (no such user, no directory, no supervisor): the job fails with why.
void QueueServer::fail_start(store::JobRecord& j, const std::string& why) {
    jobs_.record_state(j.id, {store::JobState::starting}, store::JobState::failed, unix_millis(), std::nullopt, why);
    j.state = store::JobState::failed;
    j.note = why;
    job_final(j);
}

void QueueServer::launch(std::int64_t id) {
    store::JobRecord& j = jobs_.open()[id];
    if (Status free = verify_gpus(j.gpus); !free.ok()) {
        // Back in the queue: the next plan sees the new process (and skips that GPU).
        const std::string& why = free.error().message;
        jobs_.record_state(id, {store::JobState::starting}, store::JobState::queued, unix_millis(), std::nullopt, why);
        j.state = store::JobState::queued;
        j.gpus.clear();
        j.cpus.clear();
        jobs_.waiting()[id] = why;
        return;
    }
    Result<JobOwner> owner = job_owner(j.owner_uid);
    if (!owner.ok()) return fail_start(j, owner.error().message);
    const std::string dir = attempt_dir(id, j.attempt);
    if (Status made = make_attempt_dirs(options_.jobs_dir + "/" + std::to_string(id), dir); !made.ok())
        return fail_start(j, made.error().message);
    auto watched = std::make_unique<WatchedJob>();
    Result<ShimSpec> spec = job_spec(j, *owner, dir, *watched);
    if (!spec.ok()) return fail_start(j, spec.error().message);
    start_supervised(j, dir, spec->env, std::move(watched));
}

// What the supervisor runs, written to DIR/spec: the command as its owner with its environment,
// CPUs and cgroup; the hook's socket made in `dir` and handed to `watched`.
Result<ShimSpec> QueueServer::job_spec(const store::JobRecord& j, const JobOwner& owner, const std::string& dir,
                                       WatchedJob& watched) {
    const JobRequest* req = jobs_.request_of(j);
    JobEnvInput in;
    in.submitted = j.env;
    in.gpu_job = req && gpus_asked(req->want) > 0;
    in.gpus = visible_devices(j.gpus, last_pool_.gpus, options_.uuid_visible_devices);
    in.cpus = static_cast<unsigned>(j.cpus.size());
    in.job_id = j.id;
    in.array_id = j.array_id;
    in.array_index = j.array_index;
    in.attempt = j.attempt;
    in.after_oom = j.attempt > 0 && j.note.rfind(kOomRetryNote, 0) == 0;
    // The Python hook's socket: the job's processes send to it as the owner.
    Result<run::EventsSocket> events = run::EventsSocket::open_at(dir + "/events");
    if (events.ok()) {
        if (::geteuid() == 0) ::chown(events->path().c_str(), owner.uid, owner.gid);
        in.events_path = events->path();
        watched.events.emplace(std::move(*events));
        // The hook's out-of-memory capture beside it, written as the owner (docs/memory.md).
        in.memory_dir = dir + "/memory";
        watched.memory_dir = in.memory_dir;
    }
    // The stack handler (the agent's one shim, on the job's PYTHONPATH), and the job's own directories
    // for its stacks and its Flight Recorder, the owner's (its processes write there). The supervisor
    // makes these directories (ShimSpec::owner_dirs) before the command starts.
    const std::string stacks = dir + "/stacks", fr = stacks + "/fr";
    if (shim_dir_.ok()) {
        in.stack_shim_dir = *shim_dir_;
        in.stacks_dir = stacks;
        in.flight_recorder_dir = fr;
        watched.stacks_dir = stacks;
    } else {
        std::fprintf(stderr, "baton: job %lld gets no stack handler (no hang verdict): %s\n",
                     static_cast<long long>(j.id), shim_dir_.error().message.c_str());
    }
    ShimSpec spec;
    spec.env = job_environment(in);
    set_login_variables(spec.env, owner);
    spec.job = j.id;
    spec.attempt = j.attempt;
    spec.argv = j.argv;
    spec.cwd = j.cwd;
    spec.uid = owner.uid;
    spec.gid = owner.gid;
    spec.user = owner.name;
    spec.cpus = j.cpus;
    spec.end_grace_seconds = options_.end_grace_seconds;
    for (const std::string& d : {in.stacks_dir, in.flight_recorder_dir, in.memory_dir})
        if (!d.empty()) spec.owner_dirs.push_back(d);
    // (its limits: the memory it asked for, the CPUs it was given)
    Result<std::string> cg = cgroups_.create(j.id, j.attempt, req ? req->want.memory_bytes : 0, j.cpus);
    if (cg.ok())
        spec.cgroup = *cg;
    else
        std::fprintf(stderr, "baton: job %lld runs without its cgroup: %s\n", static_cast<long long>(j.id),
                     cg.error().message.c_str());
    ::unlink((dir + "/status").c_str());
    if (Status w = write_file_atomically(dir + "/spec", spec_json(spec)); !w.ok()) return w.error();
    return spec;
}

// The supervisor: its own session, the go pipe on descriptor 3, nothing else inherited. It runs
// the job only after the store says it runs it (the go).
void QueueServer::start_supervised(store::JobRecord& j, const std::string& dir, const std::vector<std::string>& env,
                                   std::unique_ptr<WatchedJob> watched) {
    const std::int64_t id = j.id;
    int go[2];
    if (::pipe2(go, O_CLOEXEC) != 0) return fail_start(j, std::string("cannot make a pipe: ") + std::strerror(errno));
    // Its rare complaints (a status it cannot write, CPUs it cannot pin) go to the agent's log, each
    // naming its job: not a file of its own per job, one more inode each start.
    Result<StartedSupervisor> started =
        start_supervisor(options_.spawner.get(), options_.shim_program, dir, go[0], STDERR_FILENO);
    ::close(go[0]);
    if (!started.ok()) {
        ::close(go[1]);
        return fail_start(j, started.error().message);
    }
    const pid_t pid = started->pid;
    auto r = std::make_unique<Running>();
    r->pid = pid;
    r->child = started->own_child;
    r->dir = dir;
    r->pidfd = os::open_pidfd(pid);
    r->start_ticks = store::process_start_ticks(pid).value_or(0);
    Result<bool> recorded =
        store_->queue_jobs().job_running(id, static_cast<std::uint32_t>(pid), r->start_ticks, boot_id(), std::nullopt);
    if (!recorded.ok() || !*recorded) {
        // Not written down: the supervisor must not run it (closing the pipe says so).
        ::close(go[1]);
        if (r->child) ::waitpid(pid, nullptr, 0);
        if (r->pidfd >= 0) ::close(r->pidfd);
        jobs_.record_state(id, {store::JobState::starting}, store::JobState::queued, unix_millis(), std::nullopt,
                           recorded.ok() ? "" : recorded.error().message);
        j.state = store::JobState::queued;
        return;
    }
    (void)!::write(go[1], "g", 1);
    ::close(go[1]);
    j.state = store::JobState::running;
    j.pid = static_cast<std::uint32_t>(pid);

    watch(j, pid, env, std::move(watched));
    running_[id] = std::move(r);
}

void QueueServer::watch(const store::JobRecord& j, pid_t pid, const std::vector<std::string>& env,
                        std::unique_ptr<WatchedJob> watched) {
    start_watch(*watched, j, pid, attempt_dir(j.id, j.attempt), env, options_.thresholds, job_history_, options_.hang);
    // What baton usage counts of it (the processes and GPU indices come with each sample).
    diagnose::OtherJob& u = watched->usage;
    u.kind = "queue";
    u.info.id = std::to_string(j.id);
    u.info.label = "queue:" + u.info.id;
    u.info.name = j.name;
    u.info.user = users_.name(j.owner_uid);
    u.start_ms = j.start_ms;
    if (!j.cpus.empty()) u.info.allocated_cpus = static_cast<unsigned>(j.cpus.size());
    if (const JobRequest* req = jobs_.request_of(j); req && req->want.memory_bytes)
        u.info.allocated_memory_bytes = req->want.memory_bytes;
    watched->gpu_uuids = j.gpus;
    watches_.add(j.id, std::move(watched));
}

void QueueServer::link_runs() {
    for (const auto& [id, run] : watches_.newly_recorded()) jobs_.link_run(id, run);
}

void QueueServer::ended(std::int64_t id) {
    auto it = running_.find(id);
    if (it == running_.end()) return;
    std::unique_ptr<Running> r = std::move(it->second);
    running_.erase(it);
    set_paused_root(static_cast<std::uint32_t>(r->pid), false);
    if (r->child) ::waitpid(r->pid, nullptr, 0);
    if (r->pidfd >= 0) ::close(r->pidfd);
    store::JobRecord& j = jobs_.open()[id];
    cgroups_.drop(id, j.attempt);
    std::unique_ptr<WatchedJob> w = watches_.take(id);
    const std::optional<std::string> text = read_small_file(r->dir + "/status", 1u << 20);
    Result<ShimStatus> st = text ? parse_status_json(*text) : Result<ShimStatus>(make_error("no status"));
    const std::int64_t now = unix_millis();
    const JobRequest* req = jobs_.request_of(j);
    const unsigned retries = req ? req->retries : 0;

    if (!st.ok()) return ended_unsaid(j, w.get(), retries);
    if (!st->started && st->no_go) {
        if (w) w->watch.reset();
        jobs_.record_state(id, {store::JobState::starting, store::JobState::running}, store::JobState::queued, now);
        j = store_->queue_jobs().job(id).value_or(j);
        return;
    }
    std::optional<run::RunStats> stats;
    if (w) {
        stats = finish_watch(*w, *st, req ? req->want.memory_bytes : 0);
        if (stats->recording.run_id) {
            jobs_.link_run(id, stats->recording.run_id);
            j.run_id = stats->recording.run_id;
        }
    }
    JobEnd end = job_end(*st, stats ? stats->findings : std::vector<diagnose::Finding>{});
    if (!r->idle_note.empty() && end.state == store::JobState::cancelled) {
        end.note = r->idle_note;
        if (r->idle_requeue) {
            jobs_.record_state(id, {store::JobState::starting, store::JobState::running}, end.state, now,
                               st->started ? std::optional<int>(st->exit_status) : std::nullopt, end.note);
            if (store_->queue_jobs().requeue_job(id, end.note).value_or(false)) {
                j = store_->queue_jobs().job(id).value_or(j);
                return;
            }
        }
    }
    jobs_.record_state(id, {store::JobState::starting, store::JobState::running}, end.state, now,
                       st->started ? std::optional<int>(st->exit_status) : std::nullopt, end.note);
    j.state = end.state;
    j.note = end.note;
    j.end_ms = now;
    if (st->started) j.exit_status = st->exit_status;
    const bool retry_oom = req && req->on_oom == OnOom::retry;
    if (end.state == store::JobState::failed && end.oom && retry_oom && static_cast<unsigned>(j.attempt) < retries) {
        const std::string again = kOomRetryNote + std::to_string(j.attempt + 1) + " of " + std::to_string(retries);
        if (store_->queue_jobs().requeue_job(id, again).value_or(false)) {
            j = store_->queue_jobs().job(id).value_or(j);
            return;
        }
    }
    job_final(j);
}

// The supervisor ended without a status (killed, or the machine's disk full): the job is lost,
// and requeued while its retries allow.
void QueueServer::ended_unsaid(store::JobRecord& j, WatchedJob* w, unsigned retries) {
    if (w) w->watch->finish(137, SIGKILL, monotonic_seconds() - w->started, 0);
    const std::string note = "its supervisor ended without saying how the job ended";
    jobs_.record_state(j.id, {store::JobState::starting, store::JobState::running}, store::JobState::lost,
                       unix_millis(), std::nullopt, note);
    j.state = store::JobState::lost;
    j.note = note;
    if (static_cast<unsigned>(j.attempt) < retries &&
        store_->queue_jobs().requeue_job(j.id, "lost: retry " + std::to_string(j.attempt + 1)).value_or(false)) {
        j = store_->queue_jobs().job(j.id).value_or(j);
        return;
    }
    job_final(j);
}

// [queue] idle_policy: each running job's GPUs as the latest sample saw them; a job idle past
// idle_minutes is warned about (the agent's log, and its note in baton show), requeued or cancelled.
void QueueServer::apply_idle_policy() {
    if (options_.idle_policy == IdlePolicy::off) return;
    std::shared_ptr<const Snapshot> snap = latest_ ? latest_() : nullptr;
    if (!snap) return;
    std::vector<IdleJob> jobs;
    for (const auto& [id, r] : running_) {
        auto open = jobs_.open().find(id);
        if (open == jobs_.open().end() || open->second.gpus.empty() || r->cancelling) continue;
        IdleJob ij;
        ij.id = id;
        ij.paused = open->second.paused_ms.has_value();
        for (const std::string& uuid : open->second.gpus) {
            const auto g = std::find_if(snap->gpus.begin(), snap->gpus.end(),
                                        [&](const GpuInfo& x) { return x.uuid == uuid && !x.stale; });
            if (g == snap->gpus.end())
                ij.gpus.emplace_back(0, std::nullopt);
            else
                ij.gpus.emplace_back(g->index, g->utilization_percent);
        }
        jobs.push_back(std::move(ij));
    }
    for (const auto& [id, why] : idle_.judge(jobs, monotonic_seconds(), options_.idle_minutes)) {
        store::JobRecord& j = jobs_.open()[id];
        const char* policy = idle_policy_name(options_.idle_policy);
        std::fprintf(stderr, "baton: job %lld: %s ([queue] idle_policy = %s)\n", static_cast<long long>(id),
                     why.c_str(), policy);
        auto r = running_.find(id);
        if (options_.idle_policy == IdlePolicy::warn || r == running_.end()) {
            j.note = "idle: " + why;  // (shown while it runs; its end says its own)
            continue;
        }
        const bool requeue = options_.idle_policy == IdlePolicy::requeue;
        r->second->idle_note = (requeue ? "requeued: " : "cancelled: ") + why + " ([queue] idle_policy)";
        r->second->idle_requeue = requeue;
        cancel_running(*r->second, options_.end_grace_seconds);
    }
}

// The job's --on-end and the admin's [queue] on_end, each as its owner (job_callbacks.hpp).
void QueueServer::run_callbacks(const store::JobRecord& j) {
    const JobRequest* req = jobs_.request_of(j);
    const std::string own = req ? req->on_end : std::string();
    if (own.empty() && options_.on_end.empty()) return;
    Result<JobOwner> owner = job_owner(j.owner_uid);
    if (!owner.ok()) {
        std::fprintf(stderr, "baton: job %lld's on-end commands do not run: %s\n", static_cast<long long>(j.id),
                     escaped_line(owner.error().message).c_str());
        return;
    }
    const EndedJob end{j.id, j.name, store::state_name(j.state), owner->name, j.exit_status};
    const std::vector<std::string> env = callback_environment(end, *owner);
    for (const auto& [command, what] :
         {std::pair{own, std::string("--on-end")}, std::pair{options_.on_end, std::string("[queue] on_end")}}) {
        if (command.empty()) continue;
        Status started =
            callbacks_.start(callback_command(command, end), *owner, env, j.cwd, STDERR_FILENO, options_.on_end_timeout,
                             "job " + std::to_string(j.id) + "'s " + what + " command");
        if (!started.ok()) std::fprintf(stderr, "baton: %s\n", escaped_line(started.error().message).c_str());
    }
}

void QueueServer::job_final(const store::JobRecord& j) {
    const std::int64_t id = j.id;
    run_callbacks(j);
    metrics_.ended({j.id, j.name, users_.name(j.owner_uid), store::state_name(j.state), j.exit_status,
                    j.end_ms.value_or(unix_millis())});
    const std::string line = job_line(j);
    for (auto& [fd, c] : clients_)
        if (c->waiting == id) {
            c->out += line;
            c->waiting.reset();
        }
    jobs_.close(id);
}

void QueueServer::cancel_running(Running& r, double grace_seconds) {
    r.cancelling = true;
    sigval v{};
    v.sival_int = static_cast<int>(std::min(grace_seconds * 1000.0, 2147483647.0));
    ::sigqueue(r.pid, SIGTERM, v);
}

}  // namespace baton::queue
