// ProcessTable: every process under the proc root, read with descriptors kept open between
// ticks (design.md's hot path).
//
// Per process, /proc/PID/stat is pread on every tick, unless the process provably did not
// run (below); status, cmdline and cgroup are read when a process is first seen and again
// only when its command name changes (an exec); /proc/PID/io is pread only when the process
// used CPU since its last I/O reading, since a process that ran no code issued no I/O (its
// counters are read when it next runs, and the delta is spread over the whole span: totals
// are never lost).
//
// Idle processes: generating /proc/PID/stat is the kernel's most expensive per-process work
// (it walks every thread for CPU times and formats 52 fields); /proc/PID/schedstat costs a
// quarter of it. For a single-threaded process that was not running at its last stat read,
// an unchanged schedstat (runtime and switch-in count) proves it has not run since, so its
// stat fields are the same and the stat read is skipped. What can change a process that does
// not run is handled: page reclaim and swap lower its RSS (any movement of
// ScanHints::reclaim_activity forces full reads for everyone), its parent's exit reparents
// it (processes whose parent exited or became a zombie in this or the previous scan are read
// in full), and anything rarer (vfork, ptrace pokes, swapoff) is caught by a full read at
// least every kIdleRefreshSeconds. docs/architecture.md has the reasoning.
//
// Long-idle processes (only when the table is made with `trust_idle_after_seconds`, as baton serve
// does): a process that has not run for that long is not looked at between its full reads at all
// (no schedstat either) on a tick where no task was created and none exited since the last scan,
// since reading schedstat for hundreds of sleeping daemons every second was most of an agent's CPU.
// It shows 0 % CPU until its next full read, which gives its CPU time since the last one (the
// rate is spread over that span: totals are never lost). What is given up: a long-idle process
// that wakes is seen up to kIdleRefreshSeconds late, and one that becomes a zombie, or whose
// parent does, shows its old state or parent for as long. A tick with a fork or an exit anywhere
// checks everyone as above, so an exited process never lingers and a reused pid is never taken
// for the old process.
//
// A process that exits mid-scan simply drops out; a reused pid is a new process (its kept
// stat descriptor fails with ESRCH and a fresh one is opened).
// Thread: not thread-safe; one sampler thread owns it.
#pragma once

#include <cstdint>
#include <dirent.h>
#include <string>
#include <unordered_map>
#include <vector>

#include "sample/linux/kept_file.hpp"
#include "sample/linux/user_names.hpp"
#include "sample/snapshot.hpp"

namespace baton::os {

// System-wide counters (from SystemReader) that let a scan skip work.
struct ScanHints {
    // Tasks created since boot ("processes" in /proc/stat): unchanged means no new process.
    std::optional<std::uint64_t> forks_since_boot;
    // VmStat::reclaim_activity: unchanged means no page was reclaimed or swapped. Without it,
    // idle processes are never skipped.
    std::optional<std::uint64_t> reclaim_activity;
    // Tasks alive (/proc/loadavg): with forks_since_boot unchanged, unchanged means none exited.
    // Without both, long-idle processes are never trusted.
    std::optional<std::uint64_t> tasks_alive;
};

class ProcessTable {
  public:
    // An idle process's stat is read in full at least this often (the first time after it is
    // seen, spread by pid over the second half of the span, so that idle processes do not all
    // come due on one tick; then each keeps its phase).
    static constexpr double kIdleRefreshSeconds = 5.0;

    // `skip_idle`: false reads every process's stat on every tick (no schedstat at all).
    // `trust_idle_after_seconds` > 0: processes idle that long are trusted to stay idle until
    // their next full read (above); needs `skip_idle`.
    explicit ProcessTable(std::string proc_root, bool skip_idle = true, double trust_idle_after_seconds = 0);
    ~ProcessTable();
    ProcessTable(const ProcessTable&) = delete;
    ProcessTable& operator=(const ProcessTable&) = delete;

    // Scans the proc root. `now` is monotonic seconds; `boot_time_seconds` converts start
    // times to Unix time. Replaces `out` with the processes alive now, sorted by pid,
    // reusing its storage. CPU % and I/O rates are absent for a process seen for the first
    // time.
    //
    // `hints.forks_since_boot`, when given, lets a scan skip listing the proc directory: if no
    // task was created since the last listing, the processes alive are the known ones minus
    // those whose kept stat descriptor now fails. `hints.reclaim_activity` enables the idle
    // skip described above.
    void scan(double now, std::uint64_t boot_time_seconds, std::vector<ProcessInfo>& out, const ScanHints& hints = {});

    // How many scans listed the directory, and how many stat reads were skipped for idle
    // processes (for tests and benchmarks).
    std::uint64_t listings() const { return listings_; }
    std::uint64_t idle_skips() const { return idle_skips_; }
    // How many of those were trusted long-idle processes, not even checked.
    std::uint64_t trusted_skips() const { return trusted_skips_; }

    // Number of processes tracked (open descriptor sets).
    std::size_t size() const { return entries_.size(); }

  private:
    struct Entry {
        KeptFile stat;
        KeptFile io;
        KeptFile sched;  // schedstat; closed when unsupported or out of descriptors
        bool io_denied = false;
        // No descriptor could be kept (EMFILE/ENFILE): the file is opened by path each tick.
        bool stat_by_path = false, io_by_path = false;
        // The last full stat reading.
        std::uint64_t start_ticks = 0;
        std::uint32_t ppid = 0;
        char state = '?';
        unsigned threads = 0;
        std::uint64_t rss_pages = 0;
        // schedstat read just before that stat reading (valid only then), and when the next
        // full read is due even if the process stays idle.
        bool sched_valid = false;
        std::uint64_t sched_runtime_ns = 0, sched_switches = 0;
        double full_read_due = 0;
        double last_ran = 0;  // when it was last seen to have run (or first seen)
        std::uint32_t uid = 0;
        std::optional<std::uint32_t> innermost_pid;
        std::string comm, command, cgroup;
        JobRef job;  // from the cgroup
        // Previous readings for rates.
        double cpu_time_at = -1;
        std::uint64_t cpu_ticks = 0;
        double io_time_at = -1;
        std::uint64_t io_cpu_ticks = 0;  // cpu_ticks when io was last read
        std::uint64_t io_read = 0, io_write = 0;
        std::uint64_t seen_tick = 0;
    };

    bool load_identity(std::uint32_t pid, Entry& e);
    // Opens the kept descriptors of a process seen for the first time; false if it is gone.
    bool open_new(std::uint32_t pid, Entry& e);
    // Reads schedstat before a stat read and decides whether that stat read can be skipped.
    // `trust`: this tick, long-idle processes may go unchecked (no task created or exited).
    enum class Idle { gone, skip, trusted, read };
    Idle check_idle(Entry& e, double now, bool reclaim_quiet, bool trust);
    bool parent_exited(std::uint32_t ppid) const;
    // Sets p's I/O rates from /proc/PID/io; `ticks` is the CPU time just read from stat.
    void update_io_rates(std::uint32_t pid, Entry& e, std::uint64_t ticks, double now, ProcessInfo& p);
    // Reads /proc/PID/`file` into buf_: through the kept descriptor, or by path.
    bool read_pid_file(KeptFile& kept, bool by_path, std::uint32_t pid, const char* file);

    // scan()'s steps, in order. What this tick may skip, from the hints against the last scan's
    // (the listing of /proc redone when a task was created).
    struct TickFacts {
        bool reclaim_quiet = false;  // no page reclaimed since the last scan
        bool trust = false;          // no task created or exited since the last scan
    };
    TickFacts begin_tick(const ScanHints& hints);
    void list_pids();
    // One process's reading this tick: a new one, an exec, its CPU ticks, whether stat was read.
    struct Reading {
        bool fresh = false;
        bool exec_seen = false;
        std::uint64_t ticks = 0;
        Idle idle = Idle::read;
    };
    // Reads its stat (and a new process's identity, opening its io file); false: it is gone.
    // r.fresh becomes true when the pid turned out to be another process's.
    bool read_stat(std::uint32_t pid, Entry& e, double now, Reading& r);
    // Its row in the snapshot, from the entry (strings copied only when they changed).
    void fill(ProcessInfo& p, std::uint32_t pid, Entry& e, const Reading& r, double now,
              std::uint64_t boot_time_seconds);
    // Forgets the entries not seen this tick (their descriptors close); `alive` were seen.
    void drop_gone(std::size_t alive);

    std::string root_;
    DIR* dir_ = nullptr;
    std::unordered_map<std::uint32_t, Entry> entries_;
    std::vector<std::uint32_t> pids_;
    UserNames users_;
    ReadBuffer buf_;
    std::string path_;
    std::uint64_t tick_ = 0;
    std::uint64_t listings_ = 0;
    std::uint64_t idle_skips_ = 0;
    std::uint64_t trusted_skips_ = 0;
    std::optional<std::uint64_t> forks_at_listing_;
    std::optional<std::uint64_t> reclaim_at_last_scan_;
    std::optional<std::uint64_t> forks_at_last_scan_, tasks_at_last_scan_;
    // Pids that exited or became zombies in this scan and in the previous one, in scan
    // order: their children were reparented, so those are read in full.
    std::vector<std::uint32_t> exited_now_, exited_before_;
    bool skip_idle_;
    double trust_idle_after_;  // 0: never
    // Descriptors this table may keep open: the soft RLIMIT_NOFILE less 64 for the rest of
    // baton. Past it, files are opened by path each tick (slower, never wrong).
    std::size_t fd_budget_ = static_cast<std::size_t>(-1);
    long clock_ticks_per_second_;
    long page_size_;
};

}  // namespace baton::os
