// The client's requests, typed: one function per request baton's commands make of the agent,
// each sending it (queue_client's ask_agent) and parsing the answer into views, so a command reads
// fields and error codes, never the answer's JSON keys or an error's text. docs/queue.md has the
// answers these parse.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "queue/job_view.hpp"
#include "queue/pool_view.hpp"
#include "queue/protocol.hpp"
#include "queue/queue_client.hpp"
#include "store/history.hpp"

namespace baton::queue {

using Environment = std::map<std::string, std::string>;

// `baton submit`'s answer (its request goes on the connection connect_or_start_agent made, with
// call()): the job's id and state, or the agent's refusal (a bad request, GPUs that do not exist)
// with its code. Kept apart from call() so that a caller tells a refusal from a lost connection.
struct Submitted {
    std::int64_t id = 0;
    store::JobState state = store::JobState::queued;
    std::vector<std::int64_t> ids;  // an array: every element's id, `id` (the array's) first
};
Result<Submitted> parse_submit_reply(const Reply& reply);

// `baton queue`: the jobs (ended ones too with `all`).
Result<std::vector<JobView>> list_jobs(const Environment& env, bool all);

// `baton show`: one job.
Result<JobView> show_job(const Environment& env, std::int64_t id);

// `baton wait`: the job once it has ended. An agent that goes away meanwhile (restarting) is
// asked again every half second: the job is in its store and it answers when back.
Result<JobView> wait_for_job(const Environment& env, std::int64_t id);

// `baton cancel`, `hold`, `release`, `retry` (op): what became of each job, in the order given.
struct JobChange {
    std::int64_t id = 0;
    std::string outcome;  // "cancelled", "cancelling", "already done", "held", "queued", ... (docs/queue.md)
};
Result<std::vector<JobChange>> change_jobs(const Environment& env, Op op, const std::vector<std::int64_t>& ids,
                                           double grace_seconds);

// `baton restart`: the new job made from an ended one's spec (queued).
Result<Submitted> restart_job(const Environment& env, std::int64_t id);

// `baton queue --gpus`: the queue's GPU pool (the agent's info).
Result<PoolView> queue_pool(const Environment& env);

// `baton edit`: the job as edited.
Result<JobView> edit_job(const Environment& env, std::int64_t id, const JobEdit& edit);

// `baton group`: the groups with their limits and how many of their jobs run and wait.
struct GroupView {
    std::string name, owner;
    unsigned parallel = 0, running = 0, waiting = 0;
};
Result<std::vector<GroupView>> list_groups(const Environment& env);
Result<std::vector<GroupView>> parse_groups(const nlohmann::json& answer);
// `baton group add|set NAME --parallel N` (adds it, or changes its limit) and `baton group remove NAME`.
Status set_group(const Environment& env, const std::string& name, unsigned parallel);
Status remove_group(const Environment& env, const std::string& name);

// `baton usage`: one record per job seen since `since_ms` (only `user`'s, when not ""), as the agent
// recorded them (store/usage_records.hpp).
Result<std::vector<store::UsageRecord>> job_usage(const Environment& env, std::int64_t since_ms,
                                                  const std::string& user);
Result<std::vector<store::UsageRecord>> parse_usage(const nlohmann::json& answer);

// `baton queue clean`: the ids of the ended jobs the agent forgot (the caller's; root's: everyone's).
Result<std::vector<std::int64_t>> clean_jobs(const Environment& env, bool successful_only);
Result<std::vector<std::int64_t>> parse_cleaned(const nlohmann::json& answer);

// `baton logs`: the bytes of a job's stdout (or stderr) from `offset`, at most one chunk.
struct LogChunk {
    std::string data;          // the bytes, as the job wrote them (not necessarily UTF-8)
    std::uint64_t offset = 0;  // where the next chunk starts
    std::uint64_t size = 0;    // the file's size now
    bool ended = false;        // the job has ended: the file will not grow
};
Result<LogChunk> read_log(const Environment& env, std::int64_t id, bool stderr_stream, std::uint64_t offset);

// Parsers of the answers (exposed for tests): invalid_argument naming the field that is missing or
// of the wrong type.
Result<std::vector<JobView>> parse_job_list(const nlohmann::json& answer);
Result<std::vector<JobChange>> parse_job_changes(const nlohmann::json& answer);
Result<LogChunk> parse_log_chunk(const nlohmann::json& answer);

}  // namespace baton::queue
