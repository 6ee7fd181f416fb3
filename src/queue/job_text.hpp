// The queue's jobs for people, from the jobs the agent answers with (job_view.hpp) and the Slurm
// rows `baton queue` adds (slurm_client.hpp): the table of
// `baton queue` and the record of `baton show`. Every text a job's submitter chose (its name,
// command, directory, note) goes through core/printable, so a hostile name cannot drive the
// terminal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "queue/job_view.hpp"

namespace baton::queue {

// "42" -> 42; anything else (0, a sign, a word, past int64) is an invalid_argument error
// naming the word: "'x' is not a job id (baton queue lists them)".
Result<std::int64_t> parse_job_id(const std::string& word);

// One row of `baton queue`: a job of this machine's queue, or one handed to Slurm.
struct JobRow {
    std::string id;  // "7", "slurm:41"
    std::string owner, state;
    std::string gpus, cpus;  // held indices or a count, "(N)" asked, "-"
    std::optional<std::int64_t> submit_ms, start_ms, end_ms;
    std::string name;
};
JobRow job_row(const JobView& job);
// A row of slurm_client's slurm_queue_rows() (its "id", "owner", "state", "gpus_count", ...).
JobRow slurm_row(const nlohmann::json& row);

// ID, OWNER, STATE, GPUS, CPUS, WAITED, RAN, NAME; columns as wide as their widest cell.
std::string jobs_table(const std::vector<JobRow>& jobs);
// What `baton queue` says instead of a bare header when no job is queued or running: how many ended
// ones `--all` would list, or that the queue is empty.
std::string no_open_jobs_text(std::size_t ended);
// Rows as columns two spaces apart, each as wide as its widest cell (the last one as it is).
std::string columns_text(const std::vector<std::vector<std::string>>& rows);

// `baton show`: one "key: value" line each (job, owner, state, waiting, command quoted as a
// shell would need it typed, asks, GPUs, CPUs, priority, after, attempt, waited, ran, pid, run).
std::string job_text(const JobView& job);

}  // namespace baton::queue
