// ProcessTable: every process under the proc root, read with descriptors kept open between
// ticks (design.md's hot path).
//
// Per process, /proc/PID/stat is pread on every tick; status, cmdline and cgroup are read
// when a process is first seen and again only when its command name changes (an exec);
// /proc/PID/io is pread only when the process used CPU since its last I/O reading, since a
// process that ran no code issued no I/O (its counters are read when it next runs, and the
// delta is spread over the whole span: totals are never lost).
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

class ProcessTable {
  public:
    explicit ProcessTable(std::string proc_root);
    ~ProcessTable();
    ProcessTable(const ProcessTable&) = delete;
    ProcessTable& operator=(const ProcessTable&) = delete;

    // Scans the proc root. `now` is monotonic seconds; `boot_time_seconds` converts start
    // times to Unix time. Replaces `out` with the processes alive now, sorted by pid,
    // reusing its storage. CPU % and I/O rates are absent for a process seen for the first
    // time.
    //
    // `forks_since_boot` (the "processes" counter of /proc/stat), when given, lets a scan
    // skip listing the proc directory: if no task was created since the last listing, the
    // processes alive are the known ones minus those whose kept stat descriptor now fails.
    void scan(double now, std::uint64_t boot_time_seconds, std::vector<ProcessInfo>& out,
              std::optional<std::uint64_t> forks_since_boot = std::nullopt);

    // How many scans listed the directory (for tests of the skip above).
    std::uint64_t listings() const { return listings_; }

    // Number of processes tracked (open descriptor sets).
    std::size_t size() const { return entries_.size(); }

  private:
    struct Entry {
        KeptFile stat;
        KeptFile io;
        bool io_denied = false;
        // No descriptor could be kept (EMFILE/ENFILE): the file is opened by path each tick.
        bool stat_by_path = false, io_by_path = false;
        std::uint64_t start_ticks = 0;
        std::uint32_t uid = 0;
        std::optional<std::uint32_t> innermost_pid;
        std::string comm, command, cgroup;
        // Previous readings for rates.
        double cpu_time_at = -1;
        std::uint64_t cpu_ticks = 0;
        double io_time_at = -1;
        std::uint64_t io_cpu_ticks = 0;  // cpu_ticks when io was last read
        std::uint64_t io_read = 0, io_write = 0;
        std::uint64_t seen_tick = 0;
    };

    bool load_identity(std::uint32_t pid, Entry& e);
    // Sets p's I/O rates from /proc/PID/io; `ticks` is the CPU time just read from stat.
    void update_io_rates(std::uint32_t pid, Entry& e, std::uint64_t ticks, double now, ProcessInfo& p);
    // Reads /proc/PID/`file` into buf_: through the kept descriptor, or by path.
    bool read_pid_file(KeptFile& kept, bool by_path, std::uint32_t pid, const char* file);
    void fill(std::uint32_t pid, Entry& e, double now, std::uint64_t boot_time_seconds, ProcessInfo& p);

    std::string root_;
    DIR* dir_ = nullptr;
    std::unordered_map<std::uint32_t, Entry> entries_;
    std::vector<std::uint32_t> pids_;
    UserNames users_;
    ReadBuffer buf_;
    std::string path_;
    std::uint64_t tick_ = 0;
    std::uint64_t listings_ = 0;
    std::optional<std::uint64_t> forks_at_listing_;
    // Descriptors this table may keep open: the soft RLIMIT_NOFILE less 64 for the rest of
    // baton. Past it, files are opened by path each tick (slower, never wrong).
    std::size_t fd_budget_ = static_cast<std::size_t>(-1);
    long clock_ticks_per_second_;
    long page_size_;
};

}  // namespace baton::os
