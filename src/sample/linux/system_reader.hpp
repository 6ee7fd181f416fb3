// SystemReader: the machine-wide half of a snapshot (host, CPU, memory, swap, pressure,
// disks, network), read from a /proc and /sys root with files kept open between ticks.
//
// Rates come from the difference between this reading and the previous one; the first
// read() fills counters only and leaves every rate absent.
// Thread: not thread-safe; one sampler thread owns it.
#pragma once

#include <string>
#include <vector>

#include "sample/linux/diskstats.hpp"
#include "sample/linux/kept_file.hpp"
#include "sample/linux/powercap.hpp"
#include "sample/linux/meminfo.hpp"
#include "sample/linux/net_dev.hpp"
#include "sample/linux/proc_stat.hpp"
#include "sample/linux/vmstat.hpp"
#include "sample/snapshot.hpp"

namespace baton::os {

struct Roots {
    std::string proc = "/proc";
    std::string sys = "/sys";
    std::string shm = "/dev/shm";
};

class SystemReader {
  public:
    explicit SystemReader(Roots roots);

    // Fills the system part of `snap`. `now` is the monotonic time of this reading, in seconds.
    // Files that cannot be read leave their part at defaults (and absent rates); the caller
    // learns nothing went wrong only through those gaps, by design: a missing
    // /proc/pressure is normal on old kernels.
    void read(double now, Snapshot& snap);

    // Boot time in Unix seconds (from /proc/stat btime), 0 until known. Process start times
    // are relative to it.
    std::uint64_t boot_time_seconds() const { return boot_time_; }

    // Tasks created since boot, from the last read() ("processes" in /proc/stat); absent
    // when unknown. While it stays the same, no new process can have appeared.
    std::optional<std::uint64_t> forks_since_boot() const { return forks_; }

    // Tasks (threads) alive, from the last read() (/proc/loadavg, "running/total"); absent when
    // unknown. While it and forks_since_boot stay the same, no task was created and none exited.
    std::optional<std::uint64_t> tasks_alive() const { return tasks_; }

    // VmStat::reclaim_activity from the last read(); absent when unknown. While it stays the
    // same, no page was reclaimed or swapped.
    std::optional<std::uint64_t> reclaim_activity() const { return reclaim_; }

    // Why the snapshot has no CPU package energy (PowercapReader::why_not); empty when it has.
    const std::string& cpu_energy_unavailable() const { return powercap_.why_not(); }

  private:
    void read_host(Snapshot& snap);
    void read_cpu(double dt, Snapshot& snap);
    void read_memory(double dt, Snapshot& snap);
    void read_pressure(Snapshot& snap);
    void read_disks(double dt, Snapshot& snap);
    void read_networks(double now, double dt, Snapshot& snap);
    bool is_whole_disk(std::string_view name);
    bool is_stacked_disk(std::string_view name);

    Roots roots_;
    KeptFile stat_, meminfo_, vmstat_, loadavg_, uptime_, diskstats_, netdev_;
    KeptFile psi_cpu_, psi_memory_, psi_io_;
    PowercapReader powercap_;
    ReadBuffer buf_;
    ReadBuffer speed_buf_;  // separate: net_now_ points into buf_ while speeds are read
    std::string hostname_, kernel_;

    double hz_ = 100;        // USER_HZ, the unit of /proc/stat's CPU times (sysconf(_SC_CLK_TCK))
    double last_time_ = -1;  // monotonic seconds of the previous read, -1 before the first
    std::uint64_t boot_time_ = 0;
    std::optional<std::uint64_t> forks_, reclaim_, tasks_;
    ProcStat stat_now_, stat_prev_;
    VmStat vm_prev_;
    std::vector<DiskCounters> disk_now_;
    struct PrevDisk {
        std::string name;
        DiskCounters c;
        bool whole = false;
        bool stacked = false;
    };
    std::vector<PrevDisk> disk_prev_;
    std::vector<NetCounters> net_now_;
    struct PrevNet {
        std::string name;
        NetCounters c;
        std::optional<std::uint64_t> speed_mbps;
        double speed_read_at = -1e9;
    };
    std::vector<PrevNet> net_prev_;
};

// Cumulative seconds per mode from one tick reading, `hz` ticks a second (USER_HZ).
CpuSeconds cpu_seconds(const CpuTicks& t, double hz);

// Percentages of one interval from two tick readings; all absent when no time passed.
CpuTimes cpu_times_between(const CpuTicks& before, const CpuTicks& after);

}  // namespace baton::os
