#include "queue/job_watches.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "core/clock.hpp"

namespace baton::queue {

void start_watch(WatchedJob& watched, const store::JobRecord& j, pid_t pid, const std::string& dir,
                 const std::vector<std::string>& env, const Thresholds& thresholds, const std::string& db_path) {
    run::JobWatchOptions wo;
    wo.name = j.name;
    wo.argv = j.argv;
    wo.cwd = j.cwd;
    wo.thresholds = thresholds;
    wo.db_path = db_path;
    wo.recording.say = [](const std::string&) {};  // the agent has no terminal to say it on
    for (const std::string& kv : env)
        if (kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) wo.cuda_visible_devices = kv.substr(21);
    watched.watch = std::make_unique<run::JobWatch>(std::move(wo), pid);
    watched.stderr_path = dir + "/stderr";
    watched.started = monotonic_seconds();
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

void JobWatches::feed(const diagnose::Window& window) {
    MutexLock lock(mutex_);
    for (auto& [id, w] : watched_) {
        read_stderr(*w, 16);  // (CUDA out of memory, NCCL errors)
        if (w->events) w->watch->read_events(w->events->drain());
        w->watch->sample(window);
    }
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
