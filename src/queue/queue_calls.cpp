#include "queue/queue_calls.hpp"

#include <chrono>
#include <thread>

#include "store/usage_records.hpp"

namespace baton::queue {

namespace {

using nlohmann::json;

Error bad_answer(const std::string& what) {
    return make_error(ErrorCode::invalid_argument, "the agent's answer: " + what);
}

Result<JobView> job_of(const json& answer) {
    if (!answer.contains("job")) return bad_answer("no 'job'");
    Result<JobView> job = parse_job_view(answer["job"]);
    if (!job.ok()) return bad_answer(job.error().message);
    return job;
}

}  // namespace

Result<std::vector<JobView>> parse_job_list(const json& answer) {
    if (!answer.contains("jobs") || !answer["jobs"].is_array()) return bad_answer("'jobs' must be an array");
    std::vector<JobView> jobs;
    for (const json& row : answer["jobs"]) {
        Result<JobView> job = parse_job_view(row);
        if (!job.ok()) return bad_answer(job.error().message);
        jobs.push_back(std::move(*job));
    }
    return jobs;
}

Result<std::vector<JobChange>> parse_job_changes(const json& answer) {
    if (!answer.contains("jobs") || !answer["jobs"].is_array()) return bad_answer("'jobs' must be an array");
    std::vector<JobChange> changes;
    for (const json& row : answer["jobs"]) {
        if (!row.is_object() || !row.contains("id") || !row["id"].is_number_integer())
            return bad_answer("each of 'jobs' needs an integer 'id'");
        if (!row.contains("state") || !row["state"].is_string())
            return bad_answer("each of 'jobs' needs a string 'state'");
        changes.push_back({row["id"].get<std::int64_t>(), row["state"].get<std::string>()});
    }
    return changes;
}

Result<LogChunk> parse_log_chunk(const json& answer) {
    LogChunk c;
    for (const char* key : {"offset", "size"})
        if (!answer.contains(key) || !answer[key].is_number_integer() || answer[key].get<std::int64_t>() < 0)
            return bad_answer(std::string("'") + key + "' must be a non-negative integer");
    if (!answer.contains("ended") || !answer["ended"].is_boolean()) return bad_answer("'ended' must be true or false");
    c.offset = answer["offset"].get<std::uint64_t>();
    c.size = answer["size"].get<std::uint64_t>();
    c.ended = answer["ended"].get<bool>();
    if (answer.contains("data")) {
        if (!answer["data"].is_string()) return bad_answer("'data' must be bytes");
        c.data = answer["data"].get<std::string>();
    }
    return c;
}

namespace {

Result<Submitted> submitted_of(const json& a) {
    if (!a.contains("id") || !a["id"].is_number_integer()) return bad_answer("'id' must be an integer");
    const std::optional<store::JobState> state = a.contains("state") && a["state"].is_string()
                                                     ? store::state_from_name(a["state"].get<std::string>())
                                                     : std::nullopt;
    if (!state) return bad_answer("'state' must be a job state");
    Submitted out{a["id"].get<std::int64_t>(), *state, {}};
    if (a.contains("ids")) {
        if (!a["ids"].is_array()) return bad_answer("'ids' must be a list of job ids");
        for (const json& id : a["ids"]) {
            if (!id.is_number_integer()) return bad_answer("'ids' must be a list of job ids");
            out.ids.push_back(id.get<std::int64_t>());
        }
    }
    return out;
}

}  // namespace

Result<Submitted> parse_submit_reply(const Reply& reply) {
    Result<json> answer = parse_answer(reply);
    if (!answer.ok()) return answer.error();
    return submitted_of(*answer);
}

Result<PoolView> queue_pool(const Environment& env) {
    Request r;
    r.op = Op::info;
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    if (!answer->contains("pool")) return bad_answer("no 'pool' (an older agent: restart it)");
    return parse_pool_view((*answer)["pool"]);
}

Result<JobView> edit_job(const Environment& env, std::int64_t id, const JobEdit& edit) {
    Request r;
    r.op = Op::edit;
    r.jobs = {id};
    r.edit = edit;
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return job_of(*answer);
}

Result<std::vector<GroupView>> parse_groups(const json& answer) {
    if (!answer.contains("groups") || !answer["groups"].is_array()) return bad_answer("'groups' must be a list");
    std::vector<GroupView> out;
    for (const json& g : answer["groups"]) {
        if (!g.is_object() || !g.contains("name") || !g["name"].is_string() || !g.contains("owner") ||
            !g["owner"].is_string())
            return bad_answer("a group must have a name and an owner");
        GroupView v;
        v.name = g["name"].get<std::string>();
        v.owner = g["owner"].get<std::string>();
        for (auto [key, field] :
             {std::pair{"parallel", &v.parallel}, std::pair{"running", &v.running}, std::pair{"waiting", &v.waiting}}) {
            if (!g.contains(key) || !g[key].is_number_unsigned() || g[key].get<std::uint64_t>() > 1u << 30)
                return bad_answer(std::string("a group's '") + key + "' must be a count");
            *field = g[key].get<unsigned>();
        }
        out.push_back(std::move(v));
    }
    return out;
}

Result<std::vector<GroupView>> list_groups(const Environment& env) {
    Request r;
    r.op = Op::groups;
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return parse_groups(*answer);
}

Result<std::vector<store::UsageRecord>> job_usage(const Environment& env, std::int64_t since_ms,
                                                  const std::string& user) {
    Request r;
    r.op = Op::usage;
    r.since_ms = since_ms;
    r.user = user;
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return parse_usage(*answer);
}

Result<std::vector<store::UsageRecord>> parse_usage(const json& answer) {
    auto jobs = answer.find("jobs");
    if (jobs == answer.end() || !jobs->is_array()) return bad_answer("no 'jobs'");
    std::vector<store::UsageRecord> out;
    for (const json& j : *jobs) {
        Result<store::UsageRecord> r = store::parse_usage_json(j);
        if (!r.ok()) return bad_answer(r.error().message);
        out.push_back(std::move(*r));
    }
    return out;
}

Status set_group(const Environment& env, const std::string& name, unsigned parallel) {
    Request r;
    r.op = Op::group_set;
    r.group = name;
    r.parallel = parallel;
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return Ok{};
}

Status remove_group(const Environment& env, const std::string& name) {
    Request r;
    r.op = Op::group_remove;
    r.group = name;
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return Ok{};
}

Result<Submitted> restart_job(const Environment& env, std::int64_t id) {
    Request r;
    r.op = Op::restart;
    r.jobs = {id};
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return submitted_of(*answer);
}

Result<std::vector<std::int64_t>> parse_cleaned(const json& answer) {
    if (!answer.contains("removed") || !answer["removed"].is_array()) return bad_answer("'removed' must be an array");
    std::vector<std::int64_t> ids;
    for (const json& id : answer["removed"]) {
        if (!id.is_number_integer()) return bad_answer("each of 'removed' must be a job id");
        ids.push_back(id.get<std::int64_t>());
    }
    return ids;
}

Result<std::vector<std::int64_t>> clean_jobs(const Environment& env, bool successful_only) {
    Request r;
    r.op = Op::clean;
    r.successful_only = successful_only;
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return parse_cleaned(*answer);
}

Result<std::vector<JobView>> list_jobs(const Environment& env, bool all) {
    Request r;
    r.op = Op::list;
    r.all = all;
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return parse_job_list(*answer);
}

Result<JobView> show_job(const Environment& env, std::int64_t id) {
    Request r;
    r.op = Op::show;
    r.jobs = {id};
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return job_of(*answer);
}

Result<JobView> wait_for_job(const Environment& env, std::int64_t id) {
    Request r;
    r.op = Op::wait;
    r.jobs = {id};
    // An agent that went away in the middle (restarted) is asked again, until one answers: the job
    // runs on meanwhile. No agent at the first ask is an error.
    bool was_there = false;
    for (;;) {
        Result<json> answer = ask_agent(env, r, -1);
        if (answer.ok()) return job_of(*answer);
        const bool gone = answer.is(ErrorCode::disconnected) || (was_there && answer.is(ErrorCode::unavailable));
        if (!gone) return answer.error();
        was_there = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
}

Result<std::vector<JobChange>> change_jobs(const Environment& env, Op op, const std::vector<std::int64_t>& ids,
                                           double grace_seconds) {
    Request r;
    r.op = op;
    r.jobs = ids;
    r.grace_seconds = grace_seconds;
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return parse_job_changes(*answer);
}

Result<LogChunk> read_log(const Environment& env, std::int64_t id, bool stderr_stream, std::uint64_t offset) {
    Request r;
    r.op = Op::logs;
    r.jobs = {id};
    r.stderr_stream = stderr_stream;
    r.offset = offset;
    Result<json> answer = ask_agent(env, r);
    if (!answer.ok()) return answer.error();
    return parse_log_chunk(*answer);
}

}  // namespace baton::queue
