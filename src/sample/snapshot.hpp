// The Snapshot: one consistent picture of the machine at one instant, with rates measured
// over the interval since the previous reading. Plain data: JSON, Prometheus text, the text
// summary and (later) the TUI are views of it (style.md #7).
//
// Convention: std::optional means "unknown here" (unsupported, not permitted, or no previous
// reading to take a rate from). Views omit such fields; they never print 0 for them.
// Field names mirror docs/snapshot-schema.md; each scalar has its row in formats/snapshot_fields.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.hpp"

namespace baton {

struct HostInfo {
    std::string hostname;
    std::string kernel;  // uname release
    unsigned cpu_count = 0;
    std::optional<double> uptime_seconds;
};

struct CpuTimes {
    // Percent of the interval's CPU time, 0..100; absent without a previous reading.
    std::optional<double> user_percent, system_percent, iowait_percent, steal_percent, idle_percent;
    std::optional<double> utilization_percent;  // 100 - idle - iowait
};

// The kernel's cumulative CPU time since boot, in seconds per mode (/proc/stat ticks over USER_HZ):
// the counters Prometheus' rate() wants. Guest time is inside user and nice, as the kernel counts it.
struct CpuSeconds {
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
};

struct CpuCore {
    unsigned id = 0;
    CpuTimes times;
    std::optional<CpuSeconds> seconds_total;
};

struct CpuStats {
    CpuTimes total;
    std::optional<CpuSeconds> seconds_total;  // all cores together
    std::vector<CpuCore> cores;
    double load_average[3] = {0, 0, 0};
    std::optional<double> context_switches_per_second;
    std::optional<std::uint64_t> context_switches_total;  // since boot
    unsigned runnable_tasks = 0;                          // procs_running from /proc/stat
    unsigned blocked_tasks = 0;                           // procs_blocked
    // The CPU packages' energy since the sampler's first reading (RAPL through powercap: root only
    // since Linux 5.10; absent where it cannot be read).
    std::optional<double> package_energy_joules_total;
};

struct MemoryStats {
    std::uint64_t total_bytes = 0, available_bytes = 0, used_bytes = 0, free_bytes = 0;
    std::uint64_t cached_bytes = 0, buffers_bytes = 0, shared_bytes = 0;
    std::optional<std::uint64_t> shm_total_bytes, shm_used_bytes;  // /dev/shm filesystem
};

struct SwapStats {
    std::uint64_t total_bytes = 0, used_bytes = 0;
    std::optional<double> in_bytes_per_second, out_bytes_per_second;
    std::optional<double> major_faults_per_second;
    // Since boot (/proc/vmstat pswpin and pswpout times the page size; pgmajfault).
    std::optional<std::uint64_t> in_bytes_total, out_bytes_total, major_faults_total;
    std::optional<std::uint64_t> oom_kill_total;  // /proc/vmstat oom_kill (kernel >= 4.13)
};

struct PressureLine {
    double avg10 = 0, avg60 = 0, avg300 = 0;
    std::uint64_t total_us = 0;
};

struct PressureResource {
    std::optional<PressureLine> some, full;  // cpu "full" exists only on newer kernels
};

struct PressureStats {
    bool available = false;  // the kernel exposes /proc/pressure
    PressureResource cpu, memory, io;
};

struct DiskStats {
    std::string name;
    std::optional<double> read_bytes_per_second, write_bytes_per_second;
    std::optional<double> reads_per_second, writes_per_second;
    std::optional<double> busy_percent;     // io_ticks delta / interval
    std::optional<double> average_wait_ms;  // (read + write ms) / completed ios, over the interval
    // The kernel's counters since boot (or since the device appeared).
    std::uint64_t read_bytes_total = 0, written_bytes_total = 0, reads_total = 0, writes_total = 0;
    double io_time_seconds_total = 0;  // time with I/O in flight (io_ticks)
    // Built over other block devices (device mapper, md RAID, a loop device over a file): its I/O
    // is counted again on the devices below it. From /sys/block/NAME/slaves and .../loop.
    bool stacked = false;
};

// One mounted filesystem's space (statvfs), as node_exporter's filesystem collector reads it, and
// how fast it has been filling (docs/findings.md#disk_space_low).
struct FilesystemStats {
    std::string mount_point, device, fstype;  // from /proc/self/mountinfo
    bool readonly = false;
    std::optional<std::uint64_t> size_bytes, free_bytes, avail_bytes;  // avail: what an unprivileged writer gets
    std::optional<std::uint64_t> files, files_free;                    // inodes
    // statvfs did not answer within its deadline (a hung NFS server) or failed: the values are absent.
    std::optional<std::string> error;
    // Net growth of the used bytes over the last fill_window_seconds (up to six hours of this
    // process's readings, at least 30 s of them); absent until then or when it did not grow.
    std::optional<double> fill_bytes_per_second, fill_window_seconds;
    // When most of that growth came in steps (checkpoints): their mean size and the mean time between them.
    std::optional<std::uint64_t> step_bytes;
    std::optional<double> step_interval_seconds;
    // Processes of a job (GPU processes, their descendants, and any process writing more than
    // 1 MB/s) whose working directory or files open for writing are on it, sorted.
    std::vector<std::uint32_t> writer_pids;
};

// Whether a disk's I/O is its own when disks are summed (a run's disk rates): not stacked over
// other devices (their members count) and not RAM (zram: its traffic is memory, and swap on it
// shows as swap). Leaves only, so each byte that reached storage is counted once.
inline bool counts_as_storage(const DiskStats& d) {
    return !d.stacked && d.name.rfind("zram", 0) != 0;
}

struct NetworkStats {
    std::string name;
    std::optional<double> rx_bytes_per_second, tx_bytes_per_second;
    std::uint64_t rx_bytes_total = 0, tx_bytes_total = 0;  // the kernel's counters
    std::optional<std::uint64_t> speed_mbps;               // link speed, when the driver reports one
};

// Which of NVML's lists a GPU process is on: compute (a CUDA context) or graphics (a display or
// rendering client). Only compute processes are jobs.
enum class GpuProcessType : std::uint8_t { compute, graphics };
template <>
struct EnumNames<GpuProcessType> {
    static constexpr std::array<const char*, 2> list{"compute", "graphics"};
};

// What a snapshot's GPU readings are worth; `Snapshot::gpu_status` says it in one line for people.
enum class GpuState : std::uint8_t {
    ok,         // every GPU answered this tick
    no_driver,  // no NVIDIA driver (its NVML library is not there): a machine without GPUs to read
    no_gpus,    // NVML answered and counted no GPU
    failed,     // NVML is there but could not start (initialisation, counting the devices)
    failing,    // some GPUs did not answer this tick (the status names them)
    stale,      // an NVML call overran its deadline: the values are the last good ones
    disabled,   // GPU sampling is turned off (--no-gpus, [sample] gpus = false)
    not_read,   // not read yet (an agent's first moments)
};
template <>
struct EnumNames<GpuState> {
    static constexpr std::array<const char*, 8> list{"ok",      "no_driver", "no_gpus",  "failed",
                                                     "failing", "stale",     "disabled", "not_read"};
};

// A machine that has no GPU to read (no driver, none found, sampling off): nothing is wrong with
// its GPUs, there are none to judge.
inline bool no_gpus_here(GpuState s) {
    return s == GpuState::no_driver || s == GpuState::no_gpus || s == GpuState::disabled;
}

// The state a gpu_status line says, for recordings made before baton wrote gpu_state.
GpuState gpu_state_from_status(const std::string& status);

// nvmlComputeMode_t, in its order: who may make a CUDA context on the GPU. shared is NVML's
// DEFAULT (any number of processes), written "default".
enum class ComputeMode : std::uint8_t { shared, exclusive_thread, prohibited, exclusive_process };
template <>
struct EnumNames<ComputeMode> {
    static constexpr std::array<const char*, 4> list{"default", "exclusive_thread", "prohibited", "exclusive_process"};
};

struct GpuProcess {
    std::uint32_t pid = 0;                       // host pid, as NVML reports it
    std::optional<std::uint32_t> container_pid;  // the pid inside the process's own pid namespace, when it differs
    // The process in baton's pid namespace (processes[].pid): NVML's pid when baton sees it, else
    // (baton in a container, NVML reporting host pids) the one process that holds this GPU's
    // device file open, when only one does. Absent: not tied to a process baton sees.
    std::optional<std::uint32_t> local_pid;
    // The pid to look the process up by in this snapshot's process table.
    std::uint32_t our_pid() const { return local_pid.value_or(pid); }
    std::optional<std::uint64_t> used_memory_bytes;
    std::optional<double> sm_utilization_percent;
    GpuProcessType type = GpuProcessType::compute;
    // The MIG instance it runs in (GPU instance, compute instance); absent outside MIG.
    std::optional<unsigned> gpu_instance_id, compute_instance_id;
};

// One MIG device of a GPU in MIG mode: a GPU instance (its memory and SMs) with a compute instance.
struct MigInstance {
    unsigned gpu_instance_id = 0, compute_instance_id = 0;
    std::string uuid;  // "MIG-..."
    std::string name;  // e.g. "NVIDIA H100 80GB HBM3 MIG 3g.40gb"
    std::optional<std::uint64_t> memory_total_bytes, memory_used_bytes;
    std::vector<std::uint32_t> pids;  // the compute processes on it, as NVML reports them (host pids)
};

// One XID (an error the NVIDIA driver reported for a GPU: docs/findings.md#gpu_xid) seen by the
// event watch since baton started watching.
struct XidCount {
    unsigned xid = 0;
    std::uint64_t count = 0;
    std::int64_t last_unix_ms = 0;  // when the newest of them came
    bool operator==(const XidCount&) const = default;
};

struct GpuInfo {
    unsigned index = 0;  // position in PCI bus order
    std::string uuid, name, pci_bus_id;
    std::optional<unsigned> minor_number;  // N of its device file /dev/nvidiaN
    std::optional<double> utilization_percent, memory_utilization_percent;
    std::optional<std::uint64_t> memory_total_bytes, memory_used_bytes, memory_free_bytes, memory_reserved_bytes;
    std::optional<double> temperature_celsius;
    std::optional<double> memory_temperature_celsius;  // the HBM's own sensor (data-centre GPUs; NVML field 82)
    std::optional<double> power_watts, power_limit_watts;
    std::optional<unsigned> sm_clock_mhz, sm_clock_max_mhz, memory_clock_mhz, memory_clock_max_mhz;
    std::optional<std::vector<std::string>> throttle_reasons;  // decoded clock-event reasons
    std::optional<unsigned> pcie_generation, pcie_generation_max, pcie_width, pcie_width_max;
    std::optional<double> pcie_rx_bytes_per_second, pcie_tx_bytes_per_second;
    std::optional<std::uint64_t> ecc_uncorrected_volatile, ecc_corrected_volatile;  // since the driver loaded
    // Memory health: pages retired for ECC errors (before Ampere), rows remapped (Ampere and newer),
    // a remapping waiting for a GPU reset, a remapping that failed (the GPU needs service).
    std::optional<std::uint64_t> retired_pages;
    std::optional<unsigned> remapped_rows_corrected, remapped_rows_uncorrected;
    std::optional<bool> remapping_pending, remapping_failed;
    std::optional<double> fan_speed_percent;  // intended fan speed, share of its maximum; absent: no fan (SXM)
    std::optional<double> encoder_utilization_percent, decoder_utilization_percent;  // NVENC, NVDEC
    // NVLink: links up (absent: the GPU has none) and data moved over all of them, both ways.
    std::optional<unsigned> nvlink_links_active;
    std::optional<double> nvlink_rx_bytes_per_second, nvlink_tx_bytes_per_second;
    // Since the driver loaded: energy (nvmlDeviceGetTotalEnergyConsumption, Volta and newer) and
    // PCIe replays (link errors the GPU retried).
    std::optional<double> energy_joules_total;
    std::optional<std::uint64_t> pcie_replay_total;
    std::optional<bool> persistence_mode;
    std::optional<ComputeMode> compute_mode;
    std::optional<bool> mig_mode;
    std::vector<MigInstance> mig_instances;  // with mig_mode: its MIG devices, by GPU then compute instance
    std::optional<double> sm_activity_percent, tensor_activity_percent;  // GPM (Hopper+)
    std::vector<GpuProcess> processes;
    // XIDs reported since baton began watching the GPU's critical-error events, by XID; absent when
    // they are not watched (the driver or GPU does not give them).
    std::optional<std::vector<XidCount>> xid_errors;
    bool stale = false;                // the values are from an earlier tick: NVML stopped answering
    std::optional<std::string> error;  // e.g. "GPU is lost"
    bool lost = false;                 // NVML answered GPU_IS_LOST: fell off the bus (Xid 79), no more values
};

// What a process runs as part of, read from its cgroup path (sample/linux/cgroup_owner.hpp), so no
// prolog or mapping file is needed: a Slurm job, a Kubernetes pod, a container (Docker, containerd,
// CRI-O, Podman, LXC), a systemd service, a user's session or user services. none: the root cgroup,
// a cgroup namespace that hides the path, or a layout baton does not know.
enum class JobKind : std::uint8_t { none, slurm, pod, container, service, user };
template <>
struct EnumNames<JobKind> {
    static constexpr std::array<const char*, 6> list{"none", "slurm", "pod", "container", "service", "user"};
};

struct JobRef {
    JobKind kind = JobKind::none;
    // slurm: the job id ("1234"); pod: the pod's UID; container: the container id (hex, as the
    // runtime names it); service: the unit ("jupyter.service"); user: the uid ("1000").
    std::string id;
    std::string step;          // slurm: the step ("0", "batch", "extern", "interactive")
    std::string container_id;  // pod: its container's id (hex); container: the same as id
    std::string runtime;       // pod and container: docker, containerd, cri-o, podman or lxc, when the path says
    bool operator==(const JobRef&) const = default;
};

// One job with processes on this machine (or GPUs allocated to it here): its names where the
// node has them (Slurm: the process's SLURM_* environment or scontrol; Kubernetes: the kubelet's
// pod-resources API), filled by sample/jobs/job_table.hpp. Empty strings: not known.
struct JobInfo {
    JobKind kind = JobKind::none;
    std::string id;                   // as JobRef::id
    std::string label;                // how findings and series name it: "slurm:1234", "pod:NAMESPACE/NAME" (pod:UID
                                      // until named), "container:ID12", "service:UNIT", "user:NAME"
    std::string name;                 // Slurm job name, pod name, unit
    std::string user;                 // Slurm's job user; else the user of its first process
    std::string account, partition;   // Slurm
    std::string pod_namespace;        // Kubernetes
    std::string container;            // Kubernetes: the container its GPUs were allocated to, when one
    std::string names_from;           // where the names came from: "environ", "scontrol", "kubelet"
    std::vector<std::uint32_t> pids;  // its processes here, sorted
    std::vector<unsigned> gpus;       // GPUs its processes use (NVML), by index, sorted
    std::vector<unsigned> allocated_gpus;                 // GPUs the scheduler gave it here, when known, sorted
    std::optional<unsigned> allocated_cpus;               // cores allocated to it on this node (Slurm)
    std::optional<std::uint64_t> allocated_memory_bytes;  // memory allocated on this node (Slurm)
    std::optional<double> time_limit_seconds;             // Slurm's limit (absent: unlimited or not known)
    std::optional<std::int64_t> start_time_unix;          // when Slurm started it (scontrol)
};

struct ProcessInfo {
    std::uint32_t pid = 0, ppid = 0;
    std::uint32_t uid = 0;
    std::string user;
    char state = '?';
    std::string name;                // comm
    std::string command;             // full command line, arguments joined by spaces; [name] for kernel threads
    std::int64_t start_time_ms = 0;  // Unix ms
    // /proc/PID/stat's start time, clock ticks after boot: with the pid, names this process and no
    // later one (signals check it: sample/linux/pid_signal.hpp). 0 when not read from this /proc.
    std::uint64_t start_ticks = 0;
    std::optional<double> cpu_percent;  // of one core (may exceed 100 for multi-threaded)
    double cpu_seconds_total = 0;       // user + system time since it started
    std::uint64_t rss_bytes = 0;
    unsigned threads = 0;
    std::optional<double> read_bytes_per_second, write_bytes_per_second;  // /proc/PID/io, where permitted
    std::optional<std::uint32_t> container_pid;                           // innermost NSpid, when it differs from pid
    std::string cgroup;  // the path that names its job (cgroup_owner.hpp chooses among v1's hierarchies)
    JobRef job;
    std::optional<std::uint64_t> gpu_memory_bytes;  // summed over GPUs, from NVML
    std::vector<unsigned> gpu_indices;
    // It holds a GPU's device file open, but NVML's per-process memory could not be tied to it
    // alone (several processes of this pid namespace hold that GPU, and NVML's pids are not ours).
    bool gpu_memory_ambiguous = false;
};

struct Snapshot {
    std::int64_t time_unix_ms = 0;  // the wall clock: labels the snapshot; NTP may step it
    // CLOCK_MONOTONIC when it was taken: orders snapshots and measures windows, since it never
    // steps. Comparable within one boot of one machine only. Absent in recordings made before
    // baton wrote it (then the wall clock orders them).
    std::optional<double> monotonic_seconds;
    double interval_seconds = 0;  // over which the rates were measured
    HostInfo host;
    CpuStats cpu;
    MemoryStats memory;
    SwapStats swap;
    PressureStats pressure;
    std::vector<DiskStats> disks;
    std::vector<FilesystemStats> filesystems;  // real mounts (no /proc, /sys, cgroup ...), by mount point
    std::vector<NetworkStats> networks;
    GpuState gpu_state = GpuState::not_read;
    std::string gpu_status;  // "ok", or why there are no (fresh) GPU readings: gpu_state for people
    std::optional<std::string> gpu_driver_version;
    std::optional<std::string> gpu_nvml_version, gpu_cuda_driver_version;
    std::vector<GpuInfo> gpus;
    bool processes_collected = true;
    std::vector<ProcessInfo> processes;  // sorted by pid
    std::vector<JobInfo> jobs;           // the jobs its processes belong to (JobKind::none excluded)
};

}  // namespace baton
