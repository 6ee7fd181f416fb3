// The queue in the agent's /metrics: how many jobs are open in each state, how many ended in each
// final state since the agent started (every state there from the start at 0, so increase() sees
// the first), and each job's end as an event: a series naming the job that lives for
// kEndEventSeconds after its end, which an alert rule turns into one notification per job
// (deploy/prometheus/baton-rules.yml, BatonQueuedJobFailed). The queue thread records, the HTTP
// thread reads.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "core/thread_safety.hpp"
#include "formats/prometheus_text.hpp"

namespace baton::queue {

inline constexpr double kEndEventSeconds = 15 * 60;

class QueueMetrics {
  public:
    struct End {
        std::int64_t id = 0;
        std::string name, user, state;  // state: done, failed, cancelled, lost
        std::optional<int> exit_status;
        std::int64_t end_ms = 0;
    };
    void ended(End e);
    // The open jobs by state name (queued, held, starting, running), as the queue has them now.
    void set_open(std::map<std::string, unsigned> counts);
    // baton_queue_jobs, baton_queue_jobs_ended_total and baton_queue_job_ended_timestamp_seconds, the
    // events older than kEndEventSeconds before `now_ms` left out (and forgotten).
    void append(formats::Exposition& e, std::int64_t now_ms);

  private:
    Mutex mutex_;
    std::map<std::string, unsigned> open_ BATON_GUARDED_BY(mutex_);
    std::map<std::string, std::uint64_t> ended_ BATON_GUARDED_BY(mutex_);
    std::deque<End> recent_ BATON_GUARDED_BY(mutex_);  // oldest first, at most kMaxEvents
    static constexpr std::size_t kMaxEvents = 1000;
};

}  // namespace baton::queue
