// baton edit: a job that has not started takes a new command, name, priority, dependencies,
// resources or group. The edited job is checked as a submit is (what this machine can never run, a
// GPU not in the pool, a group that does not exist), and its dependencies must not lead back to it
// (two jobs each waiting for the other would wait for ever). Runs on the queue thread.
#include <set>

#include "queue/queue_server.hpp"
#include "queue/queue_server_parts.hpp"
#include "store/history_jobs.hpp"

namespace baton::queue {

namespace {

Error refused(std::string message) {
    return make_error(ErrorCode::invalid_argument, std::move(message));
}

}  // namespace

std::string QueueServer::edit(const Client& c, std::int64_t id, const JobEdit& e) {
    Result<store::JobRecord> found = jobs_.find(id);
    if (!found.ok()) return refusal_line(found.error());
    store::JobRecord j = *found;
    const std::string job = "job " + std::to_string(id);
    if (c.peer.uid != 0 && c.peer.uid != j.owner_uid)
        return refusal_line(make_error(ErrorCode::permission_denied, job + " belongs to " + users_.name(j.owner_uid) +
                                                                         ": only its owner or root may edit it"));
    if (j.state != store::JobState::queued && j.state != store::JobState::held)
        return refusal_line(refused(job + " is " + store::state_name(j.state) +
                                    ": only a queued or held job is edited (a running one: baton cancel, then "
                                    "baton restart with the new values)"));
    const JobRequest* current = jobs_.request_of(j);
    if (!current) return refusal_line(make_error(job + "'s request cannot be read: cancel it and submit it again"));
    JobRequest req = *current;
    Pool pool = current_pool();
    if (e.gpus) {
        req.want.gpus = *e.gpus;
        req.want.gpu_uuids.clear();
    }
    if (e.gpu_list) {
        if (!pool.gpus_known)
            return refusal_line(
                make_error(ErrorCode::unavailable,
                           "--gpu " + *e.gpu_list + ": the GPUs cannot be read now (" + pool.gpus_problem + ")"));
        Result<std::vector<std::string>> uuids = resolve_gpus(*e.gpu_list, pool);
        if (!uuids.ok()) return refusal_line(uuids.error());
        req.want.gpu_uuids = *uuids;
        req.want.gpus = 0;
    }
    if (e.gpu_memory_bytes) {
        req.gpu_memory_auto = false;
        if (*e.gpu_memory_bytes)
            req.want.gpu_memory_bytes = *e.gpu_memory_bytes;
        else
            req.want.gpu_memory_bytes.reset();
    }
    if (e.cpus) req.want.cpus = *e.cpus;
    if (e.memory_bytes) req.want.memory_bytes = *e.memory_bytes;
    if (e.group) {
        if (!e.group->empty() && !groups_.count(*e.group))
            return refusal_line(make_error(
                ErrorCode::invalid_argument,
                "--group " + *e.group + ": no such group (baton group add " + *e.group + " --parallel N makes it)"));
        req.group = *e.group;
    }
    if (Status fits = check_request(req, pool); !fits.ok()) return refusal_line(fits.error());
    if (e.after) {
        // Each must exist and none may wait, through its own dependencies, for this job.
        for (std::int64_t a : *e.after)
            if (!jobs_.find(a).ok())
                return refusal_line(
                    make_error(ErrorCode::invalid_argument,
                               "--after " + std::to_string(a) + ": no job " + std::to_string(a) + " in the queue"));
        std::set<std::int64_t> seen;
        std::vector<std::int64_t> todo = *e.after;
        while (!todo.empty()) {
            const std::int64_t d = todo.back();
            todo.pop_back();
            if (d == id)
                return refusal_line(
                    refused("--after: " + job + " would wait for itself (a job it would wait for waits for it)"));
            if (!seen.insert(d).second) continue;
            auto open = jobs_.open().find(d);
            if (open != jobs_.open().end())
                todo.insert(todo.end(), open->second.after.begin(), open->second.after.end());
        }
        j.after = *e.after;
        j.after_ok = e.after_ok;
    }
    if (e.argv) j.argv = *e.argv;
    if (e.name) j.name = e.name->empty() ? run::command_name(j.argv) : *e.name;
    if (e.priority) j.priority = *e.priority;
    j.request = request_json(req);
    Result<bool> stored = store_->queue_jobs().edit_job(j);
    if (!stored.ok()) return refusal_line(stored.error());
    if (!*stored) return refusal_line(refused(job + " started meanwhile: only a queued or held job is edited"));
    jobs_.open()[id] = j;
    return job_line(j);
}

}  // namespace baton::queue
