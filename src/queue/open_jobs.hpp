// The queue's open jobs in memory, kept in step with the store (the agent's queue thread alone uses
// it): the records of every job not yet ended, the last plan's reason for each waiting one, and each
// open job's request parsed once. State changes go to the store first and are said in the agent's log
// when the store cannot take them (a full disk); the record in memory moves on regardless, and the
// job is read back from the store at the next start.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "queue/job_request.hpp"
#include "store/history.hpp"

namespace baton::queue {

class OpenJobs {
  public:
    explicit OpenJobs(store::History* store = nullptr) : store_(store) {}
    void set_store(store::History* store) { store_ = store; }

    // The open jobs by id (queued, held, starting, running), iterated in id order.
    std::map<std::int64_t, store::JobRecord>& open() { return open_; }
    const std::map<std::int64_t, store::JobRecord>& open() const { return open_; }
    // Why each queued job waits, from the last plan (scheduler.hpp's reasons).
    std::map<std::int64_t, std::string>& waiting() { return waiting_; }
    const std::map<std::int64_t, std::string>& waiting() const { return waiting_; }

    // The job: its open record, else the store's (an ended job); not_found when neither has it.
    Result<store::JobRecord> find(std::int64_t id) const;
    // The job's parsed request (its `request` JSON), parsed once while the job is open; null when it
    // cannot be parsed. An ended job's is parsed each time and not kept (the cache would grow with
    // the history). Valid until the next call.
    const JobRequest* request_of(const store::JobRecord& j);
    // The store's change_job_state, its failure said in the agent's log (callers that act on whether
    // the job was in `from` call the store themselves).
    void record_state(std::int64_t id, const std::vector<store::JobState>& from, store::JobState to,
                      std::int64_t now_ms, std::optional<int> exit_status = std::nullopt, const std::string& note = "");
    // The job's run in the history, in the store (its failure logged) and in the open record.
    void link_run(std::int64_t id, std::int64_t run_id);
    // The job ended for good: nothing of it stays in memory.
    void close(std::int64_t id);

  private:
    store::History* store_;
    std::map<std::int64_t, store::JobRecord> open_;
    std::map<std::int64_t, std::string> waiting_;
    std::map<std::int64_t, std::pair<std::string, JobRequest>> requests_;  // request_of(): text, parsed
    JobRequest scratch_request_;
};

}  // namespace baton::queue
