// The jobs of a snapshot: its processes grouped by the job their cgroup names (ProcessInfo::job),
// with the GPUs they use, named where the node can name them. Slurm jobs are named from a task's
// SLURM_* environment (/proc/PID/environ: root or the job's user may read it), else by one
// `scontrol show job -o -d ID` per new job on a worker thread of its own (a deadline on each, a
// failure retried after a minute), so sampling never waits for Slurm and never runs a program per
// sample. Names are cached by job and forgotten ten minutes after its last process went.
//
// Which jobs are listed: every Slurm job, pod and container with a process here; a systemd
// service or a user's session only while one of its processes uses a GPU (a box's dozens of
// daemons are not jobs; a notebook server on a GPU is).
//
// Pods are named by the kubelet's pod-resources API, asked every ten seconds on the same worker
// while its socket exists: the API lists pods by name with the devices (GPU UUIDs) allocated to
// each container, not by UID, so a pod whose process uses a GPU is named by that GPU's allocation
// (as dcgm-exporter names GPUs); a pod on no GPU stays pod:UID.
// Thread: update() and settle() from one thread (the sampler's); the lookups run on their own.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/thread_safety.hpp"
#include "sample/jobs/pod_resources.hpp"
#include "sample/jobs/slurm_names.hpp"
#include "sample/linux/kept_file.hpp"
#include "sample/snapshot.hpp"

namespace baton::jobs {

struct JobTableOptions {
    std::string proc_root = "/proc";
    // The program that names Slurm jobs whose environment is unreadable; empty: never run.
    std::string scontrol = "scontrol";
    // The kubelet's pod-resources API (which pod and container each GPU was allocated to); empty:
    // never asked. Asked every kubelet_interval_seconds while the socket exists.
    std::string kubelet_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
    double kubelet_interval_seconds = 10;
    double kubelet_timeout_seconds = 2;
    double lookup_timeout_seconds = 5;
    double retry_seconds = 60;    // a lookup that failed is asked again after this long
    double forget_seconds = 600;  // a job's names are kept this long after its last process
};

// "slurm:1234", "pod:NAMESPACE/NAME" (pod:UID until named), "container:ID12", "service:UNIT",
// "user:NAME" (or the uid): how findings, series and views name a job.
std::string job_label(const JobInfo& job);

class JobTable {
  public:
    explicit JobTable(JobTableOptions options);
    ~JobTable();
    JobTable(const JobTable&) = delete;
    JobTable& operator=(const JobTable&) = delete;

    // Rebuilds snap.jobs from snap.processes (after the GPU join: it reads their gpu_indices) and
    // snap.gpus; starts lookups for jobs not named yet. `now`: monotonic seconds.
    void update(Snapshot& snap, double now);

    // For a one-shot snapshot: waits up to `seconds` for the lookups in flight, then names again.
    void settle(Snapshot& snap, double now, double seconds);

  private:
    struct Known {
        SlurmNames slurm;
        PodDevice pod;                             // a pod's namespace, name and container (device fields unused)
        std::string from;                          // "environ", "scontrol"; empty while unnamed
        std::vector<std::uint32_t> environ_tried;  // pids whose environment was read
        double asked_at = -1;                      // when scontrol was last asked (-1: never)
        double last_seen = 0;
    };
    using Key = std::pair<JobKind, std::string>;

    void name_slurm(JobInfo& job, Known& k, double now);
    void name_pod(JobInfo& job, Known& k, const Snapshot& snap) const;
    void ask_kubelet(double now);
    bool read_environ(std::uint32_t pid, const std::string& job_id, SlurmNames& out);
    void ask(const std::string& job_id);
    void take_answers();
    void lookups();  // the worker thread

    JobTableOptions options_;
    std::map<Key, Known> known_;
    os::ReadBuffer buf_;
    std::string hostname_;

    Mutex mutex_;
    std::condition_variable_any wake_;
    // Slurm job ids to look up; "" asks the kubelet.
    std::deque<std::string> asked_ BATON_GUARDED_BY(mutex_);
    std::map<std::string, SlurmNames> answers_ BATON_GUARDED_BY(mutex_);  // by job id; empty job_id: failed
    std::optional<std::vector<PodDevice>> kubelet_answer_ BATON_GUARDED_BY(mutex_);
    std::map<std::string, PodDevice> pod_devices_;  // the kubelet's last answer, by device id
    double kubelet_due_ = 0;
    bool kubelet_asked_ = false;  // a call in flight
    std::size_t in_flight_ BATON_GUARDED_BY(mutex_) = 0;
    bool stopping_ BATON_GUARDED_BY(mutex_) = false;
    std::thread worker_;  // started with the first lookup
};

}  // namespace baton::jobs
