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
};

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

class JobUsageTracker {
  public:
    // `keep_seconds`: how long a job that left stays (for the epilog and `baton jobstats` after it);
    // `max_ended`: how many such jobs at most (the oldest go first).
    explicit JobUsageTracker(double keep_seconds = 3600, std::size_t max_ended = 1000)
        : keep_seconds_(keep_seconds), max_ended_(max_ended) {}

    // Feeds the newest snapshot and the findings of its tick.
    void update(const Snapshot& s, const std::vector<Finding>& findings);

    // The job whose label ("slurm:1234") or id ("1234") this is; none when this node never saw it.
    std::optional<JobUse> find(const std::string& job) const;
    std::vector<JobUse> all() const;
    std::size_t size() const { return jobs_.size(); }

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

    double keep_seconds_;
    std::size_t max_ended_;
    std::map<std::string, Acc> jobs_;  // by label
};

// Several nodes' reports of one job as one (nodes side by side, findings joined, ended when every
// node says so). Empty input: an empty JobUse.
JobUse merge_nodes(std::vector<JobUse> parts);

// What a person should change, from the figures (thresholds in docs/fleet.md#jobstats):
// "asked for 4 GPUs, used 1: request 1", "GPU memory peaked at 12 % ...: a smaller GPU or MIG slice fits".
std::vector<std::string> job_use_notes(const JobUse& j);

}  // namespace baton::diagnose
