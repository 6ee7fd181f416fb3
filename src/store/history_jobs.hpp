// The job queue in the history (history_jobs.cpp): its jobs and its groups. Every change is one
// statement or one transaction, guarded by the state the job must be in.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "store/history.hpp"
#include "store/history_table.hpp"

namespace baton::store {

class QueueJobsTable : public HistoryTable {
  public:
    explicit QueueJobsTable(History& h) : HistoryTable(h) {}

    // The job queue (history_jobs.cpp). A new job (state queued or held); returns its id.
    Result<std::int64_t> add_job(const JobRecord& j);
    // Many new jobs in one transaction (all or none), their ids in order. With `as_array`, they are
    // one array: each one's array_id becomes the first one's id (their array_index is kept).
    Result<std::vector<std::int64_t>> add_jobs(const std::vector<JobRecord>& jobs, bool as_array);
    // A job that has not started (queued or held) takes the command, name, request, priority and
    // dependencies of `j` (baton edit); false when it had started or ended meanwhile.
    Result<bool> edit_job(const JobRecord& j);
    // The queue's groups, by name; adds one or changes its limit; removes one (false: none of that name).
    Result<std::vector<JobGroup>> job_groups();
    Status set_job_group(const JobGroup& g);
    Result<bool> remove_job_group(const std::string& name);
    // Every job, or the open ones only (queued, held, starting, running), by id.
    Result<std::vector<JobRecord>> jobs(bool open_only = false);
    // One job; an error "no job N in the queue" when there is none.
    Result<JobRecord> job(std::int64_t id);
    // queued -> starting with its GPUs and CPUs, for every start of one plan in one transaction;
    // returns the jobs that moved (one cancelled or held in between does not).
    Result<std::vector<std::int64_t>> start_jobs(const std::vector<JobStartRecord>& starts, std::int64_t now_ms);
    // starting -> running, with the process that supervises it; false when it was not starting.
    Result<bool> job_running(std::int64_t id, std::uint32_t pid, std::uint64_t pid_start_ticks,
                             const std::string& boot_id, std::optional<std::int64_t> run_id);
    // Moves a job from one of `from` to `to` (hold, release, cancel); ending it (done, failed,
    // cancelled, lost) sets end_ms, exit_status and note (its GPUs and CPUs stay, as what it ran on:
    // only starting and running jobs hold them); putting
    // it back in the queue (a start that did not happen) gives them back and forgets the start.
    // False when the job was in none of `from`.
    Result<bool> change_job_state(std::int64_t id, const std::vector<JobState>& from, JobState to, std::int64_t now_ms,
                                  std::optional<int> exit_status = std::nullopt, const std::string& note = "");
    // A running job paused since `since_ms` (baton pause), or running on (none); false when it is not
    // running. Any other change of its state forgets the pause.
    Result<bool> set_job_paused(std::int64_t id, std::optional<std::int64_t> since_ms);
    // The job's record in the run history (known once its watch recorded it).
    Status set_job_run(std::int64_t id, std::int64_t run_id);
    // An ended job (failed, lost, cancelled, done) queued again as its next attempt; false when
    // it had not ended.
    Result<bool> requeue_job(std::int64_t id, const std::string& note);
    // Forgets the ended jobs (done only, with `done_only`) of `owner` (everyone's when none), but
    // those in `keep` and the newest job of all (so that no id is ever given twice), in one
    // transaction; returns their ids. Their runs stay in the history.
    Result<std::vector<std::int64_t>> remove_ended_jobs(std::optional<std::uint32_t> owner, bool done_only,
                                                        const std::set<std::int64_t>& keep);
};

}  // namespace baton::store
