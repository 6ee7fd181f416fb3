// Each real mount's space (statvfs) and how fast it fills. statvfs on a network filesystem whose
// server is gone blocks for minutes, so the mounts are read on a thread of their own every
// `interval` seconds and a tick takes the latest readings without waiting: a call that overruns
// `deadline` marks its mount stuck (error, no values), the thread is left to it and a new one reads
// the others; the stuck mount is tried again once its call has returned (node_exporter does the
// same). The fill rate is the net growth of the used bytes over the last six hours of readings
// (kept one per 30 s), with the steps that made it when it grew in steps (checkpoints).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sample/linux/mounts.hpp"
#include "sample/snapshot.hpp"

namespace baton::os {

class FilesystemSpace {
  public:
    // `proc_root`: whose self/mountinfo lists the mounts (baton's own mount namespace: the paths
    // statvfs is given must resolve here).
    explicit FilesystemSpace(std::string proc_root, double interval_seconds = 5, double deadline_seconds = 2);
    ~FilesystemSpace();
    FilesystemSpace(const FilesystemSpace&) = delete;
    FilesystemSpace& operator=(const FilesystemSpace&) = delete;

    // The latest readings with their fill rates into `out` (writer_pids left empty), and a new
    // reading asked for when `interval` has passed. `now`: monotonic seconds; never blocks on a mount.
    void fill(double now, std::vector<FilesystemStats>& out);

    // The mounts of the latest reading, to tell which one holds a path.
    const std::vector<Mount>& mounts() const { return mounts_; }

    struct Shared;

  private:
    void start_worker();

    std::shared_ptr<Shared> s_;
    double interval_, deadline_;
    double asked_at_ = -1e9;
    bool first_ = true;
    std::vector<Mount> mounts_;
    std::vector<FilesystemStats> latest_;  // the newest reading, with its trend
    // The trend: per mount point, (Unix seconds, used bytes), one point per 30 s over six hours.
    std::map<std::string, std::deque<std::pair<double, double>>> used_;
};

// The fill rate and steps of a used-bytes series (exposed for tests): sets `f`'s fill_* and step_*
// from points (Unix seconds, used bytes) in time order.
void fill_trend(const std::deque<std::pair<double, double>>& points, FilesystemStats& f);

}  // namespace baton::os
