// How well each job used what it was given on this node (jobstats' question): the agent (baton
// serve) feeds every snapshot to a JobUsageTracker, which keeps per job its processes' CPU time and
// peak memory, and per GPU it holds or uses the mean utilisation and SM activity and the peak GPU
// memory. `baton jobstats JOB` asks the agents of the job's nodes for their JobUse, merges them
// (merge_nodes) and judges them (job_use_notes): "asked for 4 GPUs, used 1: request 1". Pure: the
// snapshots' times are its clock. docs/fleet.md#jobstats says what each figure is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "diagnose/finding.hpp"
#include "sample/snapshot.hpp"

namespace baton::diagnose {

struct GpuUse {
    unsigned index = 0;
    std::string uuid;
    std::optional<unsigned> minor_number;  // jobstats keys its GPUs by it
    bool allocated = false;                // the scheduler gave it (else: the job's processes used it)
    std::optional<double> utilization_percent, sm_activity_percent;  // means over the samples that read them
    std::uint64_t memory_peak_bytes = 0;   // the GPU's (allocated or used by this job alone), else the job's processes'
    std::uint64_t memory_total_bytes = 0;  // the GPU's
    // Integrated over the samples (NodeUse says how): seconds seen, and utilisation and SM activity
    // as busy seconds (50 % for an hour: 1800); SM over the seconds that read it.
    double seconds = 0, busy_seconds = 0, sm_seconds = 0, sm_busy_seconds = 0;
};

struct NodeUse {
    std::string host;
    std::int64_t first_unix_ms = 0, last_unix_ms = 0;  // the first and last samples that saw the job here
    std::uint64_t samples = 0;
    std::optional<unsigned> cpus;                         // allocated here (Slurm), else absent
    unsigned node_cpus = 0;                               // the node's cores
    double cpu_seconds = 0;                               // its processes' user + system time while seen here
    std::optional<std::uint64_t> memory_allocated_bytes;  // Slurm's, else absent
    std::uint64_t node_memory_bytes = 0;
    std::uint64_t memory_peak_bytes = 0;  // the most its processes' RSS summed to in one sample
    std::vector<GpuUse> gpus;             // by index
    // Integrated over the samples: each counts the time since the one before it when the job was in
    // both and they are at most kMaxSampleGapMs apart (an agent stopped or a machine suspended
    // counts nothing); a job's first sample counts from its start when that is known and later. Seconds seen;
    // GPU-seconds allocated (with no allocation known: held, the GPUs its processes used); CPU-seconds allocated (when
    // `cpus` is known).
    double seconds = 0, gpu_seconds = 0, cpu_seconds_allocated = 0;
};

// Longer between two samples and the time between them is not counted (docs/queue.md#usage).
inline constexpr std::int64_t kMaxSampleGapMs = 60000;

struct JobFindingSeen {
    std::string rule;
    Severity severity = Severity::info;
    std::string summary;  // the first time it fired
    std::int64_t first_unix_ms = 0;
    bool operator==(const JobFindingSeen&) const = default;
};

struct JobUse {
    std::string label, kind, id, name, user, account, partition;
    std::optional<double> time_limit_seconds;
    std::optional<std::int64_t> start_time_unix;  // Slurm's start, when known
    bool ended = false;                           // gone from every node that reported it
    std::vector<NodeUse> nodes;
    std::vector<JobFindingSeen> findings;

    // Wall time from Slurm's start (else the first sample) to the last sample that saw it.
    double runtime_seconds() const;
};

// A job the agent knows from elsewhere than the cgroups, given to update() beside the snapshot's:
// the queue's ("queue:ID", its processes the tree under its supervisor, its GPUs and CPUs as
// allocated). Its processes are taken out of the user, service and container jobs they also sit
// in (a queued job runs in the agent's or the user's cgroup), so no GPU-second counts twice; Slurm
// jobs and pods keep theirs (jobstats asks for the allocation's whole use).
struct OtherJob {
    std::string kind;  // "queue"
    JobInfo info;      // label, id, name, user, pids (sorted), gpus, allocated_gpus, allocated_cpus/memory
    std::optional<std::int64_t> start_ms;  // when it started (Unix ms): its first sample counts from then
};

class JobUsageTracker {
  public:
    // `keep_seconds`: how long a job that left stays (for the epilog and `baton jobstats` after it);
    // `max_ended`: how many such jobs at most (the oldest go first).
    explicit JobUsageTracker(double keep_seconds = 3600, std::size_t max_ended = 1000)
        : keep_seconds_(keep_seconds), max_ended_(max_ended) {}

    // Feeds the newest snapshot, the findings of its tick and the jobs known from elsewhere.
    // Processes that hold a GPU outside every job (no cgroup names one) count as their owner's
    // "user:NAME" job, with their descendants.
    void update(const Snapshot& s, const std::vector<Finding>& findings, const std::vector<OtherJob>& others = {});

    // The job whose label ("slurm:1234") or id ("1234") this is; none when this node never saw it.
    std::optional<JobUse> find(const std::string& job) const;
    std::vector<JobUse> all() const;
    std::size_t size() const { return jobs_.size(); }
    // How many times a job has left since the tracker began (the agent writes the usage at once then).
    std::uint64_t endings() const { return endings_; }

  private:
    struct ProcessCpu {
        double base = 0, last = 0;  // CPU seconds counted from `base`
        bool seen = false;
    };
    struct GpuAcc {
        GpuUse use;
        double util_sum = 0, sm_sum = 0;
        std::uint64_t util_n = 0, sm_n = 0;
    };
    struct Acc {
        JobUse job;  // names and findings; one node (this one)
        NodeUse node;
        std::map<std::pair<std::uint32_t, std::uint64_t>, ProcessCpu> processes;  // (pid, start ticks)
        double ended_cpu_seconds = 0;                                             // processes that left
        std::map<unsigned, GpuAcc> gpus;
        std::set<std::pair<std::string, Severity>> rules;
    };
    JobUse use_of(const Acc& a) const;
    void account(const Snapshot& s, const JobInfo& j, const std::string& kind, std::optional<std::int64_t> start_ms);

    double keep_seconds_;
    std::size_t max_ended_;
    std::map<std::string, Acc> jobs_;  // by label
    std::int64_t last_tick_ms_ = 0;    // the snapshot before this one
    std::uint64_t endings_ = 0;
};

// Several nodes' reports of one job as one (nodes side by side, findings joined, ended when every
// node says so). Empty input: an empty JobUse.
JobUse merge_nodes(std::vector<JobUse> parts);

// What a person should change, from the figures (thresholds in docs/fleet.md#jobstats):
// "asked for 4 GPUs, used 1: request 1", "GPU memory peaked at 12 % ...: a smaller GPU or MIG slice fits".
std::vector<std::string> job_use_notes(const JobUse& j);

}  // namespace baton::diagnose
