// baton usage through the agent: the usage its sampling thread recorded in the history (store/
// usage_records.hpp) with its live totals over it, one record per job, for anyone who can reach the socket (a shared
// box's users see each other's jobs in `baton queue` already). Runs on the queue thread: a week of a busy box is a few
// thousand rows, read in milliseconds.
#include <nlohmann/json.hpp>

#include "queue/queue_server.hpp"
#include "store/usage_records.hpp"
#include "store/history_usage.hpp"

namespace baton::queue {

std::string QueueServer::usage(std::int64_t since_ms, const std::string& user) {
    Result<std::vector<store::UsageRecord>> rows = store_->usage_table().usage(since_ms);
    if (!rows.ok()) return refusal_line(rows.error());
    std::vector<store::UsageRecord> live =
        options_.live_usage ? options_.live_usage() : std::vector<store::UsageRecord>();
    std::erase_if(live, [&](const store::UsageRecord& r) { return r.end_ms < since_ms; });
    nlohmann::json jobs = nlohmann::json::array();
    for (const store::UsageRecord& r : store::usage_by_job(store::with_newer_stretches(std::move(*rows), live), user))
        jobs.push_back(store::usage_json(r));
    return answer_line({{"since_ms", since_ms}, {"jobs", jobs}});
}

}  // namespace baton::queue
