#include "sample/linux/filesystem_space.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <sys/statvfs.h>
#include <thread>

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/thread_name.hpp"

namespace baton::os {

struct FilesystemSpace::Shared {
    std::string proc_root;
    std::mutex m;
    std::condition_variable wake;
    bool quit = false;
    bool requested = false;
    std::uint64_t generation = 0;  // the live worker's; an abandoned one sees another and ends
    // The call under way: its mount and when it began (monotonic), empty when none.
    std::string current;
    double current_since = 0;
    std::set<std::string> stuck;  // mount points whose call has not returned yet
    // The latest complete reading.
    std::vector<Mount> mounts;
    std::vector<FilesystemStats> stats;
    bool fresh = false;  // a reading came since fill() took one
};

namespace {

constexpr double kKeepEvery = 30;      // seconds between kept trend points
constexpr double kHorizon = 6 * 3600;  // how far back the trend looks
constexpr double kMinimumWindow = 30;  // before this much history, no rate

void worker(std::shared_ptr<FilesystemSpace::Shared> s, std::uint64_t generation) {
    name_this_thread("baton-statvfs");
    std::unique_lock lock(s->m);
    for (;;) {
        s->wake.wait(lock, [&] { return s->quit || s->requested || s->generation != generation; });
        if (s->quit || s->generation != generation) return;
        s->requested = false;
        const std::string proc_root = s->proc_root;
        const std::set<std::string> stuck = s->stuck;
        lock.unlock();
        const std::vector<Mount> mounts =
            parse_mountinfo(read_small_file(proc_root + "/self/mountinfo", 4u << 20).value_or(""));
        std::vector<FilesystemStats> stats;
        for (const Mount& m : mounts) {
            FilesystemStats f;
            f.mount_point = m.mount_point;
            f.device = m.device;
            f.fstype = m.fstype;
            f.readonly = m.readonly;
            if (stuck.count(m.mount_point)) {
                f.error = "statvfs has not returned (a hung network filesystem?)";
                stats.push_back(std::move(f));
                continue;
            }
            {
                std::lock_guard g(s->m);
                if (s->generation != generation) return;
                s->current = m.mount_point;
                s->current_since = monotonic_seconds();
            }
            struct statvfs v {};
            const int rc = ::statvfs(m.mount_point.c_str(), &v);
            {
                std::lock_guard g(s->m);
                if (s->generation != generation) {
                    s->stuck.erase(m.mount_point);  // returned at last: it may be tried again
                    return;
                }
                s->current.clear();
            }
            if (rc != 0) {
                f.error = "statvfs failed";
            } else {
                const std::uint64_t frsize = v.f_frsize ? v.f_frsize : v.f_bsize;
                f.size_bytes = static_cast<std::uint64_t>(v.f_blocks) * frsize;
                f.free_bytes = static_cast<std::uint64_t>(v.f_bfree) * frsize;
                f.avail_bytes = static_cast<std::uint64_t>(v.f_bavail) * frsize;
                f.files = v.f_files;
                f.files_free = v.f_ffree;
            }
            stats.push_back(std::move(f));
        }
        lock.lock();
        if (s->generation != generation) return;
        s->mounts = mounts;
        s->stats = std::move(stats);
        s->fresh = true;
        s->wake.notify_all();
    }
}

}  // namespace

void fill_trend(const std::deque<std::pair<double, double>>& points, FilesystemStats& f) {
    f.fill_bytes_per_second.reset();
    f.fill_window_seconds.reset();
    f.step_bytes.reset();
    f.step_interval_seconds.reset();
    if (points.size() < 2) return;
    const double span = points.back().first - points.front().first;
    const double growth = points.back().second - points.front().second;
    if (span < kMinimumWindow || growth <= 0) return;
    f.fill_bytes_per_second = growth / span;
    f.fill_window_seconds = span;
    // Steps: rises that each carry a tenth of the growth or more while the rest barely moves (the
    // median rise under 1 % of it): a checkpoint every so often, not a steady stream.
    std::vector<double> rises;
    for (std::size_t i = 1; i < points.size(); ++i) rises.push_back(points[i].second - points[i - 1].second);
    std::vector<double> sorted = rises;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
    if (sorted[sorted.size() / 2] > growth / 100) return;
    double step_sum = 0;
    std::vector<double> step_times;
    for (std::size_t i = 0; i < rises.size(); ++i)
        if (rises[i] >= growth / 10) {
            step_sum += rises[i];
            step_times.push_back(points[i + 1].first);
        }
    if (step_times.size() < 2 || step_sum < 0.8 * growth) return;
    f.step_bytes = static_cast<std::uint64_t>(step_sum / static_cast<double>(step_times.size()));
    f.step_interval_seconds = (step_times.back() - step_times.front()) / static_cast<double>(step_times.size() - 1);
}

FilesystemSpace::FilesystemSpace(std::string proc_root, double interval_seconds, double deadline_seconds)
    : s_(std::make_shared<Shared>()), interval_(interval_seconds), deadline_(deadline_seconds) {
    s_->proc_root = std::move(proc_root);
    s_->requested = true;  // the first reading starts at once
    start_worker();
}

FilesystemSpace::~FilesystemSpace() {
    std::lock_guard lock(s_->m);
    s_->quit = true;
    s_->wake.notify_all();
    // The workers are detached: one stuck in statvfs ends when its call returns (it holds s_).
}

void FilesystemSpace::start_worker() {
    std::thread(worker, s_, s_->generation).detach();
}

void FilesystemSpace::fill(double now, std::vector<FilesystemStats>& out) {
    {
        std::unique_lock lock(s_->m);
        // The first snapshot waits for the first reading (a few ms), at most the deadline.
        if (first_) {
            first_ = false;
            asked_at_ = now;
            s_->wake.wait_for(lock, std::chrono::duration<double>(deadline_), [&] { return s_->fresh; });
        }
        // A call past its deadline: its mount is stuck, its thread left to it, a new one reads the rest.
        if (!s_->current.empty() && monotonic_seconds() - s_->current_since > deadline_) {
            s_->stuck.insert(s_->current);
            s_->current.clear();
            ++s_->generation;
            s_->requested = true;
            std::thread(worker, s_, s_->generation).detach();
            s_->wake.notify_all();
        }
        if (s_->fresh) {
            mounts_ = s_->mounts;
            latest_ = s_->stats;
            s_->fresh = false;
            const double t = static_cast<double>(unix_millis()) / 1000.0;
            for (const FilesystemStats& f : latest_) {
                if (!f.size_bytes || !f.free_bytes) continue;
                auto& points = used_[f.mount_point];
                const double used = static_cast<double>(*f.size_bytes - std::min(*f.size_bytes, *f.free_bytes));
                // One point per 30 s: the newest reading replaces a point younger than that.
                if (points.size() >= 2 && t - points[points.size() - 2].first < kKeepEvery)
                    points.back() = {t, used};
                else
                    points.emplace_back(t, used);
                while (!points.empty() && t - points.front().first > kHorizon) points.pop_front();
            }
            // Mounts gone: their trend too.
            for (auto it = used_.begin(); it != used_.end();)
                it = std::any_of(latest_.begin(), latest_.end(),
                                 [&](const FilesystemStats& f) { return f.mount_point == it->first; })
                         ? std::next(it)
                         : used_.erase(it);
            // The trend changes with a reading only (every interval_), not every tick: up to 720 points a mount.
            for (FilesystemStats& f : latest_) {
                const auto it = used_.find(f.mount_point);
                if (it != used_.end()) fill_trend(it->second, f);
            }
        }
        if (now - asked_at_ >= interval_) {
            asked_at_ = now;
            s_->requested = true;
            s_->wake.notify_all();
        }
    }
    out = latest_;
}

}  // namespace baton::os
