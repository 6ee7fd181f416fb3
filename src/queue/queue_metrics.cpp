#include "queue/queue_metrics.hpp"

#include "core/printable.hpp"

namespace baton::queue {

namespace {

// The families this file writes, each declared once: a sample can only name one of these.
constexpr formats::MetricFamily kBatonQueueJobs{"baton_queue_jobs", "gauge",
                                                "The queue's open jobs (baton submit), by state."};
constexpr formats::MetricFamily kBatonQueueJobsEndedTotal{"baton_queue_jobs_ended_total", "counter",
                                                          "Queued jobs that ended since the agent started, by state."};
constexpr formats::MetricFamily kBatonQueueJobEndedTimestampSeconds{
    "baton_queue_job_ended_timestamp_seconds", "gauge",
    "Unix time a queued job ended, for 15 minutes after its end: one series per job (an event to alert on)."};

}  // namespace

void QueueMetrics::ended(End e) {
    MutexLock lock(mutex_);
    ++ended_[e.state];
    recent_.push_back(std::move(e));
    while (recent_.size() > kMaxEvents) recent_.pop_front();  // (a flood of ends: the newest are kept)
}

void QueueMetrics::set_open(std::map<std::string, unsigned> counts) {
    MutexLock lock(mutex_);
    open_ = std::move(counts);
}

void QueueMetrics::append(formats::Exposition& e, std::int64_t now_ms) {
    MutexLock lock(mutex_);
    e.family(kBatonQueueJobs);
    for (const char* state : {"queued", "held", "starting", "running"}) {
        auto it = open_.find(state);
        e.sample(kBatonQueueJobs, {{"state", state}}, it == open_.end() ? 0.0 : static_cast<double>(it->second));
    }
    e.family(kBatonQueueJobsEndedTotal);
    for (const char* state : {"done", "failed", "cancelled", "lost"}) {
        auto it = ended_.find(state);
        e.sample(kBatonQueueJobsEndedTotal, {{"state", state}},
                 it == ended_.end() ? 0.0 : static_cast<double>(it->second));
    }
    e.family(kBatonQueueJobEndedTimestampSeconds);
    while (!recent_.empty() && recent_.front().end_ms < now_ms - static_cast<std::int64_t>(kEndEventSeconds * 1000))
        recent_.pop_front();
    for (const End& j : recent_)
        e.sample(kBatonQueueJobEndedTimestampSeconds,
                 {{"id", std::to_string(j.id)},
                  {"name", printable(j.name)},
                  {"user", printable(j.user)},
                  {"state", j.state},
                  {"exit_status", j.exit_status ? std::to_string(*j.exit_status) : std::string()}},
                 static_cast<double>(j.end_ms) / 1000.0);
}

}  // namespace baton::queue
