// The queue's jobs for people, from the JSON the agent answers with (docs/queue.md: "jobs" of a
// list, "job" of a show) and the Slurm rows `baton queue` adds (slurm_client.hpp): the table of
// `baton queue` and the record of `baton show`. Every text a job's submitter chose (its name,
// command, directory, note) goes through core/printable, so a hostile name cannot drive the
// terminal.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace baton::queue {

// "42" -> 42; anything else (0, a sign, a word, past int64) is an invalid_argument error
// naming the word: "'x' is not a job id (baton queue lists them)".
Result<std::int64_t> parse_job_id(const std::string& word);

// ID, OWNER, STATE, GPUS (held indices, or "(N)" asked), CPUS, WAITED, RAN, NAME; columns as wide
// as their widest cell.
std::string jobs_table(const nlohmann::json& jobs);

// `baton show`: one "key: value" line each (job, owner, state, waiting, command quoted as a
// shell would need it typed, asks, GPUs, CPUs, priority, after, attempt, waited, ran, pid, run).
std::string job_text(const nlohmann::json& job);

}  // namespace baton::queue
