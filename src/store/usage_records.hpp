// baton usage's records (store::UsageRecord) between the parts that make, keep and show them.
//
// The agent's side: from what the job tracker integrated (diagnose/job_usage.hpp,
// totals since it first saw each job) to the history's usage records, one per job and stretch of
// at most an hour, so that `baton usage --since` can leave out what a long job did before it. A
// stretch's figures are the totals' growth over it; its peaks (memory, GPU memory) are the job's
// peaks until then, not the stretch's own. Pure: the caller writes the records (History::put_usage).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "diagnose/job_usage.hpp"
#include "store/history.hpp"

namespace baton::store {

inline constexpr std::int64_t kUsageStretchMs = 3600 * 1000;

// Whether a job is one baton usage counts: the queue's, Slurm's and pods (allocations: their CPUs count
// without GPUs too), and any other only once it held a GPU (a container or service that never did is
// not a training job: jobstats follows it, usage does not).
bool counts_for_usage(const UsageRecord& r);

class UsageStretches {
  public:
    // The records to write: each job whose figures changed since the last call (with `ended_only`,
    // only those that left since), as its stretch now. A stretch an hour old is closed once
    // written; the job's next record starts a new one.
    std::vector<UsageRecord> take(const std::vector<diagnose::JobUse>& jobs, std::int64_t now_ms, bool ended_only);
    // Each job's stretch as it stands (what the next take() would write), changing nothing: the
    // live figures `baton usage` shows over the written ones (with_newer_stretches).
    std::vector<UsageRecord> current(const std::vector<diagnose::JobUse>& jobs) const;

  private:
    struct Totals {
        double seconds = 0, gpu_seconds = 0, gpu_busy_seconds = 0, sm_seconds = 0, sm_busy_seconds = 0,
               cpu_seconds_allocated = 0, cpu_seconds = 0;
    };
    struct Stretch {
        std::int64_t first_seen_ms = 0;  // the tracker's first sample of the job: a new one is a new job
        std::int64_t start_ms = 0;
        Totals base;  // the totals when the stretch began
        std::int64_t written_end_ms = -1;
        bool written_ended = false;
    };
    std::map<std::string, Stretch> stretches_;  // by label
    // The job's record now, as a stretch from `st` (a fresh one when `st` is another job's).
    static UsageRecord stretch_record(const diagnose::JobUse& j, const Stretch* st);
};

// A job's totals as one record (not a stretch: from its first sample on). `baton usage` on live
// figures and the tests use it; UsageStretches cuts the same into stretches.
UsageRecord usage_record_of(const diagnose::JobUse& job);

// Stretches with newer records of some of them: each of `newer` replaces the one of the same job and
// start (the same stretch, later), the others stay. The queue's answer lays the agent's current
// stretches (UsageStretches::current) over the written ones; the agent, a new write over one that failed.
std::vector<UsageRecord> with_newer_stretches(std::vector<UsageRecord> stretches,
                                              const std::vector<UsageRecord>& newer);

// The reader's side: a job's stretches as one record per job (by label, in order of start):
// seconds summed, peaks and GPU counts the most, from the first start to the last end, ended as
// its last stretch says. `user`: only that user's jobs ("" all).
std::vector<UsageRecord> usage_by_job(const std::vector<UsageRecord>& stretches, const std::string& user = "");

// A record as JSON (docs/queue.md#usage has the keys) and back; reading refuses what a record
// cannot hold (a negative figure, a missing key) with the key's name.
nlohmann::json usage_json(const UsageRecord& r);
Result<UsageRecord> parse_usage_json(const nlohmann::json& j);

}  // namespace baton::store
