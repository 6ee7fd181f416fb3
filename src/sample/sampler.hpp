// Sampler: takes Snapshots. It owns the Linux readers and the GPU backend, joins GPU processes
// to the process table (GPU memory per process, GPU indices, container pids), and groups the
// processes into their jobs (sample/jobs/job_table.hpp).
//
// The first take() of a Sampler reads twice, `priming_seconds` apart, so that even the first
// snapshot carries rates (issue: "the first snapshot of a run already carries rates").
// Thread: one thread calls take(); the GPU backend runs its own worker inside.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "sample/gpu/gpu_backend.hpp"
#include "sample/jobs/job_table.hpp"
#include "sample/linux/filesystem_space.hpp"
#include "sample/linux/gpu_device_files.hpp"
#include "sample/linux/written_paths.hpp"
#include "sample/linux/process_table.hpp"
#include "sample/linux/system_reader.hpp"
#include "sample/snapshot.hpp"

namespace baton {

struct SamplerOptions {
    std::string proc_root = "/proc";
    std::string sys_root = "/sys";
    std::string shm_path = "/dev/shm";
    std::string dev_root = "/dev";
    bool processes = true;  // false: system and GPUs only (the cheap snapshot)
    bool gpus = true;
    bool filesystems = true;  // each real mount's space, and which ones jobs write to
    bool jobs = true;         // the job table: jobs[], named ([jobs] attribution)
    // Processes whose trees are jobs besides the GPU processes' (baton run's command): where they
    // write counts (FilesystemStats::writer_pids).
    std::vector<std::uint32_t> job_roots;
    bool skip_idle_processes = true;  // Config::skip_idle_processes
    // > 0: processes idle this long are not checked between their full reads (baton serve;
    // os::ProcessTable says what that gives up).
    double trust_idle_after_seconds = 0;
    // Names Slurm jobs whose processes' environment baton cannot read ([jobs] scontrol; empty: never).
    std::string scontrol = "scontrol";
    // Names pods from the kubelet's pod-resources API ([jobs] kubelet_socket; empty: never).
    std::string kubelet_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
    NvmlOptions nvml;
    double priming_seconds = 0.1;

    static SamplerOptions from_config(const Config& c);
};

class Sampler {
  public:
    explicit Sampler(SamplerOptions options);
    ~Sampler();

    // Fills `snap` (reusing its storage: keep one Snapshot and pass it again each tick).
    void take(Snapshot& snap);

    // For a one-shot snapshot: waits up to `seconds` for the job names asked of Slurm, and fills
    // snap.jobs again (sampling never waits for them: they come with a later tick).
    void settle_jobs(Snapshot& snap, double seconds);

    // Why the snapshots have no CPU package energy; empty when they have.
    const std::string& cpu_energy_unavailable() const { return system_.cpu_energy_unavailable(); }

  private:
    void read_once(Snapshot& snap);

    SamplerOptions options_;
    os::SystemReader system_;
    std::unique_ptr<os::ProcessTable> processes_;
    std::unique_ptr<GpuBackend> gpu_;
    std::unique_ptr<os::GpuDeviceFiles> device_files_;  // made when first needed
    std::unique_ptr<jobs::JobTable> jobs_;              // with processes: their jobs, named
    std::unique_ptr<os::FilesystemSpace> filesystems_;
    std::unique_ptr<os::WrittenPaths> written_;  // with processes and filesystems: where jobs write
    // Which processes write to which filesystem (by mount point), worked out every kWritersSeconds:
    // a pass walks the process table for the jobs' trees (with a process tree built each tick it was
    // a tenth of the agent's instructions), and what it finds moves no faster than the space
    // readings (every 5 s) and the paths (10 s).
    static constexpr double kWritersSeconds = 5;
    std::map<std::string, std::vector<std::uint32_t>> writers_;
    double writers_due_ = 0;
    bool primed_ = false;
    double last_time_ = -1;
};

// Fills each filesystem's writer_pids: the processes of a job (GPU processes and `roots`, with their
// descendants, and any process writing more than 1 MB/s) whose working directory or open-for-writing
// files (`paths(process)`) lie on it.
void mark_filesystem_writers(Snapshot& snap, const std::vector<os::Mount>& mounts,
                             const std::vector<std::uint32_t>& roots,
                             const std::function<const std::vector<std::string>&(const ProcessInfo&)>& paths);

// Sets each process's gpu_memory_bytes and gpu_indices from snap.gpus, and each GPU
// process's local_pid and container_pid from the process table. Processes are matched by pid.
void join_gpu_processes(Snapshot& snap);

// For GPU processes join_gpu_processes() could not match (baton in a container: NVML reports host
// pids), ties GPU use to the processes that hold the GPU's device file open (`minors(pid)`: the N
// of the /dev/nvidiaN files it has open). Only the topmost holder of a tree counts (DataLoader
// workers inherit the trainer's files). One holder and one unmatched NVML process: joined (memory
// too); otherwise each holder gets the GPU index and gpu_memory_ambiguous.
void join_gpu_processes_by_device_files(Snapshot& snap,
                                        const std::function<const std::vector<unsigned>&(const ProcessInfo&)>& minors);

// Raises the soft open-file limit to the hard limit (capped at 1<<20): the sampler keeps up
// to three descriptors per process open.
void raise_open_file_limit();

}  // namespace baton
