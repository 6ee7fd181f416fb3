// What `baton usage` prints: per user and per job, GPU-hours allocated (or held, for processes the
// queue did not start) and busy, SM activity, CPU-hours, and peaks against what was asked, from the
// records the agent wrote (store/usage_records.hpp). docs/queue.md#usage says what each figure is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "store/history.hpp"

namespace baton::queue {

struct UserUsage {
    std::string user;
    unsigned jobs = 0;
    double gpu_seconds = 0, gpu_busy_seconds = 0, sm_seconds = 0, sm_busy_seconds = 0;
    // CPU time of the jobs that had CPUs allocated (its efficiency's numerator), and of all of them.
    double cpu_seconds_allocated = 0, cpu_seconds_of_allocated = 0, cpu_seconds = 0;
};

struct UsageView {
    std::int64_t since_ms = 0;
    std::vector<UserUsage> users;          // most GPU-hours first
    std::vector<store::UsageRecord> jobs;  // one per job, by start
};

// `jobs`: one record per job (store::usage_by_job).
UsageView usage_view(std::vector<store::UsageRecord> jobs, std::int64_t since_ms);
std::string usage_text(const UsageView& v);
nlohmann::json usage_view_json(const UsageView& v);

}  // namespace baton::queue
