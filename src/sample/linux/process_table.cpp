#include "sample/linux/process_table.hpp"

#include <algorithm>
#include <cerrno>
#include <sys/resource.h>
#include <unistd.h>

#include "core/text_parse.hpp"
#include "sample/linux/cgroup_owner.hpp"
#include "sample/linux/proc_pid_files.hpp"
#include "sample/linux/proc_pid_stat.hpp"

namespace baton::os {

ProcessTable::ProcessTable(std::string proc_root, bool skip_idle, double trust_idle_after_seconds)
    : root_(std::move(proc_root)),
      skip_idle_(skip_idle),
      trust_idle_after_(skip_idle ? trust_idle_after_seconds : 0),
      clock_ticks_per_second_(sysconf(_SC_CLK_TCK)),
      page_size_(sysconf(_SC_PAGESIZE)) {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        fd_budget_ = rl.rlim_cur > 128 ? static_cast<std::size_t>(rl.rlim_cur) - 64 : 0;
    dir_ = opendir(root_.c_str());
}

ProcessTable::~ProcessTable() {
    if (dir_) closedir(dir_);
}

bool ProcessTable::load_identity(std::uint32_t pid, Entry& e) {
    // status: real uid and NSpid; any of these files may vanish with the process.
    path_.assign(root_).append("/").append(std::to_string(pid));
    std::size_t base = path_.size();
    path_.append("/status");
    if (!read_file(path_, buf_)) return false;
    PidStatus st;
    parse_pid_status(buf_, st);
    e.uid = st.real_uid.value_or(0);
    e.innermost_pid = st.innermost_pid;
    path_.resize(base);
    path_.append("/cmdline");
    e.command.clear();
    if (read_file(path_, buf_)) join_cmdline(buf_, e.command);
    path_.resize(base);
    path_.append("/cgroup");
    CgroupReading cg = read_file(path_, buf_) ? read_cgroup_file(buf_) : CgroupReading();
    e.cgroup = std::move(cg.path);
    e.job = std::move(cg.job);
    return true;
}

namespace {

bool too_many_files(int err) {
    return err == EMFILE || err == ENFILE;
}

}  // namespace

bool ProcessTable::read_pid_file(KeptFile& kept, bool by_path, std::uint32_t pid, const char* file) {
    if (!by_path) return kept.read_all(buf_);
    path_.assign(root_).append("/").append(std::to_string(pid)).append(file);
    return read_file(path_, buf_);
}

void ProcessTable::update_io_rates(std::uint32_t pid, Entry& e, std::uint64_t ticks, double now, ProcessInfo& p) {
    p.read_bytes_per_second.reset();
    p.write_bytes_per_second.reset();
    if (!e.io_denied) {
        bool ran = e.io_time_at < 0 || ticks != e.io_cpu_ticks;
        PidIo io;
        if (!ran) {
            // No CPU time since the last reading: no I/O issued, rates are 0.
            p.read_bytes_per_second = 0.0;
            p.write_bytes_per_second = 0.0;
        } else if (read_pid_file(e.io, e.io_by_path, pid, "/io") && parse_pid_io(buf_, io)) {
            if (e.io_time_at >= 0 && now > e.io_time_at && io.read_bytes >= e.io_read && io.write_bytes >= e.io_write) {
                double span = now - e.io_time_at;
                p.read_bytes_per_second = static_cast<double>(io.read_bytes - e.io_read) / span;
                p.write_bytes_per_second = static_cast<double>(io.write_bytes - e.io_write) / span;
            }
            e.io_read = io.read_bytes;
            e.io_write = io.write_bytes;
            e.io_time_at = now;
            e.io_cpu_ticks = ticks;
        } else if (e.io.last_errno() == EACCES || e.io.last_errno() == EPERM) {
            e.io_denied = true;  // e.g. the process became setuid: stop trying
        }
    }
}

bool ProcessTable::open_new(std::uint32_t pid, Entry& e) {
    path_.assign(root_).append("/").append(std::to_string(pid));
    const std::size_t base = path_.size();
    path_.append("/stat");
    // Keep descriptors only while three per process fit in the budget: the rest of baton
    // (identity reads, NVML, output) must always find one free.
    e.stat_by_path = e.io_by_path = 3 * entries_.size() >= fd_budget_;
    if (e.stat_by_path) return access(path_.c_str(), R_OK) == 0;  // else: exited since readdir
    if (!e.stat.open(path_)) {
        // Out of descriptors (a hard limit too low for this many processes): read this one
        // by path each tick instead of dropping it.
        if (!too_many_files(e.stat.last_errno())) return false;  // exited since readdir
        e.stat_by_path = e.io_by_path = true;
        return true;
    }
    if (skip_idle_) {
        path_.resize(base);
        path_.append("/schedstat");
        // Without it (a kernel without CONFIG_SCHED_INFO, no descriptor left, or the process
        // just exited) the process is simply never skipped.
        e.sched.open(path_);
    }
    return true;
}

bool ProcessTable::parent_exited(std::uint32_t ppid) const {
    auto has = [ppid](const std::vector<std::uint32_t>& v) { return std::find(v.begin(), v.end(), ppid) != v.end(); };
    return has(exited_now_) || has(exited_before_);  // both short: usually empty
}

ProcessTable::Idle ProcessTable::check_idle(Entry& e, double now, bool reclaim_quiet, bool trust) {
    const bool settled = reclaim_quiet && now < e.full_read_due && !parent_exited(e.ppid);
    const bool long_idle = trust_idle_after_ > 0 && e.state != 'R' && now - e.last_ran >= trust_idle_after_;
    if (long_idle && trust && settled) return Idle::trusted;
    if (long_idle && !settled && now >= e.full_read_due) {
        // Due for its full read anyway: schedstat would only set a baseline, and a long-idle
        // process that ran is read again at once next tick (it is no longer long idle).
        e.sched_valid = false;
        return Idle::read;
    }
    const bool had_baseline = e.sched_valid;
    e.sched_valid = false;
    // Multi-threaded: the leader's schedstat says nothing about the other threads.
    if (!e.sched.is_open() || e.threads > 1) return Idle::read;
    if (!e.sched.read_all(buf_)) return e.sched.last_errno() == ESRCH ? Idle::gone : Idle::read;
    PidSchedStat ss;
    if (!parse_pid_schedstat(buf_, ss)) return Idle::read;
    // Running ('R') at the last read: a running task's runtime is only folded in at scheduler
    // ticks, so an unchanged schedstat proves nothing. A count of 0 switches: schedstat is
    // not maintained (or the task never ran).
    const bool unchanged = had_baseline && e.state != 'R' && ss.switches_in != 0 &&
                           ss.runtime_ns == e.sched_runtime_ns && ss.switches_in == e.sched_switches;
    if (had_baseline && (ss.runtime_ns != e.sched_runtime_ns || ss.switches_in != e.sched_switches)) e.last_ran = now;
    e.sched_runtime_ns = ss.runtime_ns;
    e.sched_switches = ss.switches_in;
    // Read before this tick's stat read (or standing for a skipped one): the next baseline.
    e.sched_valid = true;
    if (unchanged && settled) return Idle::skip;
    return Idle::read;
}

void ProcessTable::list_pids() {
    ++listings_;
    pids_.clear();
    if (!dir_) dir_ = opendir(root_.c_str());
    if (dir_) {
        rewinddir(dir_);
        while (dirent* d = readdir(dir_)) {
            const char* n = d->d_name;
            if (*n < '1' || *n > '9') continue;
            if (const std::optional<std::uint32_t> pid = text::parse_digits<std::uint32_t>(n)) pids_.push_back(*pid);
        }
    }
    std::sort(pids_.begin(), pids_.end());
}

ProcessTable::TickFacts ProcessTable::begin_tick(const ScanHints& hints) {
    ++tick_;
    // Without a listing, pids_ still holds the processes alive at the last scan (scan() keeps
    // only those it read), in order: nothing new can exist.
    if (!hints.forks_since_boot || !forks_at_listing_ || *hints.forks_since_boot != *forks_at_listing_) {
        forks_at_listing_ = hints.forks_since_boot;
        list_pids();
    }
    TickFacts t;
    // Stat reads may be skipped only if no page was reclaimed since the last scan (RSS of
    // idle processes unchanged); reclaim after the counter was read is seen next scan.
    t.reclaim_quiet =
        hints.reclaim_activity && reclaim_at_last_scan_ && *hints.reclaim_activity == *reclaim_at_last_scan_;
    reclaim_at_last_scan_ = hints.reclaim_activity;
    // Long-idle processes go unchecked only while no task was created or exited since the last
    // scan: then none of them can have exited or have had its pid reused.
    t.trust = trust_idle_after_ > 0 && hints.forks_since_boot && hints.tasks_alive &&
              hints.forks_since_boot == forks_at_last_scan_ && hints.tasks_alive == tasks_at_last_scan_;
    forks_at_last_scan_ = hints.forks_since_boot;
    tasks_at_last_scan_ = hints.tasks_alive;
    exited_before_.swap(exited_now_);
    exited_now_.clear();
    return t;
}

void ProcessTable::scan(double now, std::uint64_t boot_time_seconds, std::vector<ProcessInfo>& out,
                        const ScanHints& hints) {
    const TickFacts tick = begin_tick(hints);
    // Room for every listed process and a few more, at once: grown one by one, the vector doubles
    // (a table of 520 processes took room for 1,024, twice over in the agent's two snapshots).
    if (out.capacity() < pids_.size()) out.reserve(pids_.size() + pids_.size() / 16 + 8);
    std::size_t count = 0;
    for (std::size_t i = 0; i < pids_.size(); ++i) {
        const std::uint32_t pid = pids_[i];
        const auto emplaced = entries_.try_emplace(pid);
        const auto it = emplaced.first;  // (named, not bound: clang 14 cannot capture bindings)
        Reading r;
        r.fresh = emplaced.second;
        Entry& e = it->second;
        auto forget = [&] {
            if (!r.fresh) exited_now_.push_back(pid);
            entries_.erase(it);
        };
        if (r.fresh && !open_new(pid, e)) {
            entries_.erase(it);
            continue;
        }
        // schedstat is read before stat: a run between the two reads then shows as a change
        // next tick instead of hiding in the baseline.
        if (r.fresh) e.last_ran = now;
        r.idle = check_idle(e, now, tick.reclaim_quiet, tick.trust);
        if (r.idle == Idle::gone) {
            forget();
            continue;
        }
        r.ticks = e.cpu_ticks;  // a skipped process did not run: its CPU time stands
        if (r.idle == Idle::skip || r.idle == Idle::trusted) {
            ++idle_skips_;
            trusted_skips_ += r.idle == Idle::trusted ? 1 : 0;
        } else if (!read_stat(pid, e, now, r)) {
            forget();
            continue;
        }
        if (count == out.size()) out.emplace_back();
        fill(out[count], pid, e, r, now, boot_time_seconds);
        e.seen_tick = tick_;
        pids_[count] = pid;  // survivors, still in order: the walk for a tick without a listing
        ++count;
    }
    out.resize(count);
    pids_.resize(count);
    drop_gone(count);
}

bool ProcessTable::read_stat(std::uint32_t pid, Entry& e, double now, Reading& r) {
    // ESRCH: the process we had open has exited (its pid may already be reused: start over
    // with a fresh descriptor next tick).
    if (!read_pid_file(e.stat, e.stat_by_path, pid, "/stat")) return false;
    PidStat ps;
    if (!parse_pid_stat(buf_, ps)) return false;
    if (!r.fresh && ps.starttime != e.start_ticks) {
        // Same pid, different process (a kept descriptor fails instead, but a fixture tree or
        // a re-mounted /proc can do this): start over as a new process.
        exited_now_.push_back(pid);
        Entry renewed;
        renewed.stat = std::move(e.stat);
        renewed.sched = std::move(e.sched);
        renewed.stat_by_path = e.stat_by_path;
        renewed.io_by_path = e.io_by_path;
        renewed.sched_valid = e.sched_valid;  // schedstat was read this tick
        renewed.sched_runtime_ns = e.sched_runtime_ns;
        renewed.sched_switches = e.sched_switches;
        renewed.last_ran = now;
        e = std::move(renewed);
        r.fresh = true;
    }
    // A new name means an exec: re-read the identity. Kernel threads (no command line) rename
    // themselves as they pick up work; their name is all there is to show.
    r.exec_seen = !r.fresh && ps.comm != e.comm && !e.command.empty();
    // A process that became a zombie has already handed its children to a new parent.
    if (!r.fresh && (ps.state == 'Z' || ps.state == 'X') && e.state != ps.state) exited_now_.push_back(pid);
    e.comm.assign(ps.comm);
    e.start_ticks = ps.starttime;
    e.ppid = ps.ppid;
    e.state = ps.state;
    e.threads = ps.num_threads;
    e.rss_pages = ps.rss_pages;
    // The first one is spread by pid over the second half of the span, so that processes seen
    // together (at start) do not all come due on one tick; each keeps its phase after.
    e.full_read_due = now + kIdleRefreshSeconds * (r.fresh ? 0.5 + static_cast<double>(pid % 64) / 128.0 : 1.0);
    r.ticks = ps.utime + ps.stime;
    if (r.ticks != e.cpu_ticks) e.last_ran = now;
    if (!r.fresh && !r.exec_seen) return true;
    if (!load_identity(pid, e)) return false;
    if (r.fresh) {
        path_.assign(root_).append("/").append(std::to_string(pid)).append("/io");
        // Other users' io files need ptrace rights: EACCES is remembered, not retried.
        if (!e.io_by_path && !e.io.open(path_)) {
            if (too_many_files(e.io.last_errno()))
                e.io_by_path = true;
            else
                e.io_denied = true;
        }
    }
    return true;
}

void ProcessTable::fill(ProcessInfo& p, std::uint32_t pid, Entry& e, const Reading& r, double now,
                        std::uint64_t boot_time_seconds) {
    const double hz = static_cast<double>(clock_ticks_per_second_);
    // (clamped: a damaged stat file's start ticks must not overflow the conversion)
    const auto start_ms = static_cast<std::int64_t>(std::clamp(
        (static_cast<double>(boot_time_seconds) + static_cast<double>(e.start_ticks) / hz) * 1000.0, 0.0, 1e15));
    // `out` is reused tick to tick and sorted by pid, so slot `count` usually already holds this
    // very process: then its strings are current unless it was just (re)loaded or renamed, and
    // copying them again is the bulk of a scan's user time.
    const bool same_slot = p.pid == pid && p.start_time_ms == start_ms && !r.fresh && !r.exec_seen &&
                           p.name.size() == e.comm.size() && p.name == e.comm;
    if (!same_slot) {
        p.name.assign(e.comm);
        if (e.command.empty()) {
            // Kernel threads and zombies have no command line: show the name as ps does.
            p.command.assign("[").append(e.comm).append("]");
        } else {
            p.command.assign(e.command);
        }
        p.uid = e.uid;
        p.user.assign(users_.name(e.uid));
        p.cgroup.assign(e.cgroup);
        p.job = e.job;
        p.container_pid.reset();
        if (e.innermost_pid && *e.innermost_pid != pid) p.container_pid = e.innermost_pid;
    }
    p.pid = pid;
    p.ppid = e.ppid;
    p.state = e.state;
    p.threads = e.threads;
    p.rss_bytes = e.rss_pages * static_cast<std::uint64_t>(page_size_);
    p.start_time_ms = start_ms;
    p.start_ticks = e.start_ticks;
    p.gpu_memory_bytes.reset();
    p.gpu_indices.clear();
    p.gpu_memory_ambiguous = false;

    p.cpu_percent.reset();
    p.cpu_seconds_total = static_cast<double>(r.ticks) / hz;
    if (e.cpu_time_at >= 0 && now > e.cpu_time_at && r.ticks >= e.cpu_ticks)
        p.cpu_percent = 100.0 * static_cast<double>(r.ticks - e.cpu_ticks) / hz / (now - e.cpu_time_at);
    e.cpu_ticks = r.ticks;
    // A trusted tick proves nothing: the next reading's rate spans back to the last real one.
    if (r.idle != Idle::trusted) e.cpu_time_at = now;
    update_io_rates(pid, e, r.ticks, now, p);
}

void ProcessTable::drop_gone(std::size_t alive) {
    if (entries_.size() == alive) return;
    for (auto it = entries_.begin(); it != entries_.end();) {
        if (it->second.seen_tick != tick_) {
            exited_now_.push_back(it->first);
            it = entries_.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace baton::os
