#include "queue/job_watches.hpp"

#include <algorithm>

#include <fcntl.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/thread_name.hpp"
#include "diagnose/process_trees.hpp"

namespace baton::queue {

hang::FlightRecorderPaths queue_flight_recorder_paths(const std::string& fr_dir, const std::vector<std::string>& env) {
    const hang::EnvGet lookup = [&env](const std::string& k) -> std::optional<std::string> {
        for (const std::string& kv : env)
            if (kv.size() > k.size() && kv.compare(0, k.size(), k) == 0 && kv[k.size()] == '=')
                return kv.substr(k.size() + 1);
        return std::nullopt;
    };
    hang::FlightRecorderPaths p = hang::flight_recorder_paths(fr_dir, lookup);
    if (p.enabled && (p.dump_prefix != fr_dir + "/rank_" || p.pipe_prefix != fr_dir + "/pipe_")) {
        p.enabled = false;
        p.off_reason = "the job names its own dump files or pipes; the queue reads only those it placed";
    }
    return p;
}

void start_watch(WatchedJob& watched, const store::JobRecord& j, pid_t pid, const std::string& dir,
                 const std::vector<std::string>& env, const Thresholds& thresholds,
                 const std::shared_ptr<store::SharedHistory>& history, const hang::HangWatchOptions& hang) {
    run::JobWatchOptions wo;
    wo.name = j.name;
    wo.argv = j.argv;
    wo.cwd = j.cwd;
    wo.thresholds = thresholds;
    if (history) {  // (without one, the run is watched but not recorded)
        wo.db_path = history->path();
        wo.recording.shared = history;
    }
    wo.recording.say = [](const std::string&) {};  // the agent has no terminal to say it on
    for (const std::string& kv : env)
        if (kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) wo.cuda_visible_devices = kv.substr(21);
    wo.memory_dir = watched.memory_dir;
    watched.watch = std::make_unique<run::JobWatch>(std::move(wo), pid);
    watched.stderr_path = dir + "/stderr";
    watched.started = monotonic_seconds();
    watched.root = pid;
    if (!watched.stacks_dir.empty()) {
        watched.hangs =
            std::make_shared<run::JobHangs>(hang, false, "baton: job " + std::to_string(j.id), watched.stacks_dir);
        // Read with the system's Python: the agent may be root, the job's interpreter is its user's.
        watched.hangs->set_flight_recorder(queue_flight_recorder_paths(watched.stacks_dir + "/fr", env),
                                           "/usr/bin/python3");
    }
}

void read_stderr(WatchedJob& w, int max_chunks) {
    const int fd = ::open(w.stderr_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[65536];
    ssize_t n;
    int chunks = 0;
    while ((max_chunks == 0 || chunks++ < max_chunks) &&
           (n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(w.stderr_read))) > 0) {
        w.watch->read_output(std::string_view(buf, static_cast<std::size_t>(n)));
        w.stderr_read += static_cast<std::uint64_t>(n);
    }
    ::close(fd);
}

run::RunStats finish_watch(WatchedJob& w, const ShimStatus& st, std::uint64_t memory_limit) {
    read_stderr(w, 0);
    if (w.events) w.watch->read_events(w.events->drain());
    if (st.oom_kills) w.watch->set_cgroup_oom_kills(st.oom_kills, memory_limit);
    return w.watch->finish(st.exit_status, st.signal, monotonic_seconds() - w.started, st.killed_after_grace);
}

void JobWatches::add(std::int64_t id, std::unique_ptr<WatchedJob> w) {
    MutexLock lock(mutex_);
    watched_[id] = std::move(w);
}

std::unique_ptr<WatchedJob> JobWatches::take(std::int64_t id) {
    MutexLock lock(mutex_);
    auto it = watched_.find(id);
    if (it == watched_.end()) return nullptr;
    std::unique_ptr<WatchedJob> w = std::move(it->second);
    watched_.erase(it);
    return w;
}

std::vector<diagnose::Finding> JobWatches::feed(const diagnose::Window& window) {
    std::vector<diagnose::Finding> holding;
    {
        MutexLock lock(mutex_);
        for (auto& [id, w] : watched_) {
            read_stderr(*w, 16);  // (CUDA out of memory, NCCL errors)
            if (w->events) w->watch->read_events(w->events->drain());
            w->watch->sample(window);
            if (w->hang_finding) holding.push_back(*w->hang_finding);
            hangs_due_ = hangs_due_ || w->hangs;
        }
    }
    wake_hangs_.notify_all();
    return holding;
}

void JobWatches::hang_turns() {
    struct Turn {
        std::int64_t id;
        std::shared_ptr<run::JobHangs> hangs;
        pid_t root;
        run::JobHangs::Steps steps;
    };
    std::vector<Turn> turns;
    {
        MutexLock lock(mutex_);
        for (auto& [id, w] : watched_)
            if (w->hangs) turns.push_back({id, w->hangs, w->root, run::JobHangs::steps_of(*w->watch)});
    }
    for (Turn& t : turns) {
        {
            MutexLock lock(mutex_);
            if (stopping_) return;  // the agent ends: no more turns after the one under way
        }
        const run::JobHangs::Said said =
            t.hangs->step(t.steps, [&] { return run::job_ranks(t.root, t.steps.last_step_unix_ms != 0); });  // (slow)
        std::optional<diagnose::Finding> holds = t.hangs->active_finding();
        if (holds) holds->subject = "job " + std::to_string(t.id);
        MutexLock lock(mutex_);
        auto it = watched_.find(t.id);
        if (it == watched_.end() || it->second->hangs != t.hangs) continue;  // taken back meanwhile
        run::JobHangs::give(*it->second->watch, said);
        it->second->hang_finding = std::move(holds);
    }
}

void JobWatches::start_hang_thread() {
    hang_thread_ = std::thread([this] {
        name_this_thread("baton-hangs");
        for (;;) {
            {
                UniqueLock lock(mutex_);
                wake_hangs_.wait(lock, [this]() BATON_REQUIRES(mutex_) { return hangs_due_ || stopping_; });
                if (stopping_) return;
                hangs_due_ = false;
            }
            hang_turns();
        }
    });
}

void JobWatches::stop_hang_thread() {
    {
        MutexLock lock(mutex_);
        stopping_ = true;
    }
    wake_hangs_.notify_all();
    if (hang_thread_.joinable()) hang_thread_.join();
}

std::vector<diagnose::OtherJob> JobWatches::usage_jobs(const Snapshot& s) {
    std::vector<diagnose::OtherJob> out;
    MutexLock lock(mutex_);
    std::vector<const WatchedJob*> jobs;
    std::vector<std::uint32_t> roots;
    for (const auto& [id, w] : watched_)
        if (w->root > 0 && !w->usage.info.label.empty()) {
            jobs.push_back(w.get());
            roots.push_back(static_cast<std::uint32_t>(w->root));
        }
    const std::vector<std::vector<const ProcessInfo*>> trees = diagnose::process_tree_each(s, roots);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        if (trees[i].empty()) continue;  // its supervisor is gone: the queue thread ends it
        diagnose::OtherJob o = jobs[i]->usage;
        for (const ProcessInfo* p : trees[i]) {
            o.info.pids.push_back(p->pid);
            for (unsigned g : p->gpu_indices) o.info.gpus.push_back(g);
        }
        std::sort(o.info.pids.begin(), o.info.pids.end());
        for (const GpuInfo& g : s.gpus)
            if (std::find(jobs[i]->gpu_uuids.begin(), jobs[i]->gpu_uuids.end(), g.uuid) != jobs[i]->gpu_uuids.end())
                o.info.allocated_gpus.push_back(g.index);
        std::sort(o.info.gpus.begin(), o.info.gpus.end());
        o.info.gpus.erase(std::unique(o.info.gpus.begin(), o.info.gpus.end()), o.info.gpus.end());
        out.push_back(std::move(o));
    }
    return out;
}

std::vector<std::pair<std::int64_t, std::int64_t>> JobWatches::newly_recorded() {
    std::vector<std::pair<std::int64_t, std::int64_t>> found;
    MutexLock lock(mutex_);
    for (auto& [id, w] : watched_)
        if (!w->run_linked)
            if (const std::int64_t run = w->watch->run_id()) {
                w->run_linked = true;
                found.emplace_back(id, run);
            }
    return found;
}

std::size_t JobWatches::size() {
    MutexLock lock(mutex_);
    return watched_.size();
}

}  // namespace baton::queue
