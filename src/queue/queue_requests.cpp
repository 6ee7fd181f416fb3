// The answers to the queue's requests (protocol.hpp): submit, list, show, wait, logs, info, restart,
// clean and the changes (cancel, hold, release, retry, pause, resume), with the owner-or-root checks.
// Runs on the queue thread.
#include <algorithm>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/files.hpp"
#include "queue/gpu_memory_auto.hpp"
#include "queue/pool_view.hpp"
#include "queue/queue_server.hpp"
#include "queue/queue_server_parts.hpp"
#include "sample/linux/pid_signal.hpp"
#include "store/history_jobs.hpp"

namespace baton::queue {

namespace {

constexpr std::size_t kMaxLogChunk = 256 * 1024;

}  // namespace

void QueueServer::handle(Client& c, const std::string& line) {
    Result<Request> r = parse_request(line);
    if (!r.ok()) {
        c.out += refusal_line(make_error(ErrorCode::invalid_argument, r.error().message));
        return;
    }
    std::string tail;
    const std::string head = answer(c, *r, tail);
    c.out += head;
    c.out += tail;
}

JobView QueueServer::job_view(const store::JobRecord& j) {
    JobView v;
    v.id = j.id;
    v.owner_uid = j.owner_uid;
    v.owner = users_.name(j.owner_uid);
    v.name = j.name;
    v.state = j.state;
    v.priority = j.priority;
    v.argv = j.argv;
    v.cwd = j.cwd;
    if (const JobRequest* req = jobs_.request_of(j))
        v.ask = JobView::Ask{req->want, req->retries, req->on_oom, req->group, req->max_parallel};
    v.array_id = j.array_id;
    v.array_index = j.array_index;
    v.gpus = j.gpus;
    for (const std::string& u : j.gpus)
        for (const PoolGpu& g : last_pool_.gpus)
            if (g.uuid == u) v.gpu_indices.push_back(g.index);
    v.cpus = j.cpus;
    v.after = j.after;
    v.after_ok = j.after_ok;
    v.attempt = j.attempt;
    v.submit_ms = j.submit_ms;
    v.start_ms = j.start_ms;
    v.end_ms = j.end_ms;
    v.exit_status = j.exit_status;
    v.pid = j.pid;
    v.run_id = j.run_id;
    v.note = j.note;
    v.paused_ms = j.paused_ms;
    auto w = jobs_.waiting().find(j.id);
    if (j.state == store::JobState::queued && w != jobs_.waiting().end()) v.waiting = w->second;
    return v;
}

std::string QueueServer::job_json(const store::JobRecord& j) {
    return job_view_json(job_view(j)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string QueueServer::job_line(const store::JobRecord& j) {
    return answer_line_with("job", job_json(j));
}

// One handler per request; each returns the answer's line (empty: answered later, as a wait).
std::string QueueServer::answer(Client& c, const Request& r, std::string& tail) {
    switch (r.op) {
        case Op::submit:
            return submit(c, r.submit);
        case Op::list:
            return list(r.all);
        case Op::show:
            return job_line_of(r.jobs.front());
        case Op::wait:
            return wait_for(c, r.jobs.front());
        case Op::logs:
            return logs(c, r, tail);
        case Op::restart:
            return restart(c, r.jobs.front());
        case Op::clean:
            return clean(c, r.successful_only);
        case Op::groups:
            return groups();
        case Op::usage:
            return usage(r.since_ms, r.user);
        case Op::edit:
            return edit(c, r.jobs.front(), r.edit);
        case Op::group_set:
            return set_group(c, r.group, r.parallel);
        case Op::group_remove:
            return remove_group(c, r.group);
        case Op::info: {
            std::vector<std::pair<std::int64_t, std::vector<std::string>>> holders;
            for (const auto& [id, j] : jobs_.open())
                if (!j.gpus.empty()) holders.emplace_back(id, j.gpus);
            return answer_line({{"pid", ::getpid()},
                                {"socket", options_.socket_path},
                                {"cgroups", cgroups_.status()},
                                {"job_cgroups", cgroups_.active()},
                                {"pool", pool_view_json(pool_view(last_pool_, holders))}});
        }
        default:
            return change(c, r);
    }
}

// Each job's object as job_json() made it, not parsed and made again: a listing of thousands of
// queued jobs stays a few milliseconds of the queue's thread.
std::string QueueServer::list(bool all) {
    std::string jobs;
    auto add = [&](const store::JobRecord& j) { jobs += (jobs.empty() ? "" : ",") + job_json(j); };
    if (all) {
        Result<std::vector<store::JobRecord>> every = store_->queue_jobs().jobs(false);
        if (!every.ok()) return refusal_line(every.error());
        for (const store::JobRecord& j : *every) {
            auto o = jobs_.open().find(j.id);
            add(o != jobs_.open().end() ? o->second : j);
        }
    } else {
        for (const auto& [id, j] : jobs_.open()) add(j);
    }
    return answer_line_with("jobs", "[" + jobs + "]");
}

std::string QueueServer::job_line_of(std::int64_t id) {
    Result<store::JobRecord> j = jobs_.find(id);
    return j.ok() ? job_line(*j) : refusal_line(j.error());
}

// A job still open is answered when it ends (job_final); one that ended, at once.
std::string QueueServer::wait_for(Client& c, std::int64_t id) {
    Result<store::JobRecord> j = jobs_.find(id);
    if (!j.ok()) return refusal_line(j.error());
    if (store::is_final(j->state)) return job_line(*j);
    c.waiting = j->id;
    return {};
}

std::string QueueServer::submit(const Client& c, const Submission& s) {
    if (::geteuid() != 0 && c.peer.uid != ::geteuid())
        return refusal_line(
            make_error(ErrorCode::permission_denied,
                       "this agent runs as uid " + std::to_string(::geteuid()) + " and runs only that user's jobs"));
    JobRequest req = s.request;
    Pool pool = current_pool();
    if (!s.gpu_list.empty()) {
        if (!pool.gpus_known)
            return refusal_line(
                make_error(ErrorCode::unavailable,
                           "--gpu " + s.gpu_list + ": the GPUs cannot be read now (" + pool.gpus_problem + ")"));
        Result<std::vector<std::string>> uuids = resolve_gpus(s.gpu_list, pool);
        if (!uuids.ok()) return refusal_line(uuids.error());
        req.want.gpu_uuids = *uuids;
        req.want.gpus = 0;
    }
    if (req.gpu_memory_auto) {
        Result<std::uint64_t> bytes = auto_gpu_memory(*store_, s.name);
        if (!bytes.ok()) return refusal_line(bytes.error());
        req.want.gpu_memory_bytes = *bytes;
    }
    if (!req.group.empty() && !groups_.count(req.group))
        return refusal_line(make_error(
            ErrorCode::not_found,
            "--group " + req.group + ": no such group (baton group add " + req.group + " --parallel N makes it)"));
    if (s.default_cpus) req.want.cpus = default_cpus(req.want, pool);
    if (Status fits = check_request(req, pool); !fits.ok()) return refusal_line(fits.error());
    for (std::int64_t a : s.after)
        if (!jobs_.find(a).ok())
            return refusal_line(make_error(ErrorCode::not_found, "--after " + std::to_string(a) + ": no job " +
                                                                     std::to_string(a) + " in the queue"));
    store::JobRecord j;
    j.owner_uid = c.peer.uid;
    j.name = s.name.empty() ? run::command_name(s.argv) : s.name;
    j.argv = s.argv;
    j.cwd = s.cwd;
    j.env = s.env;
    j.request = request_json(req);
    j.priority = s.priority;
    j.after = s.after;
    j.after_ok = s.after_ok;
    j.state = s.hold ? store::JobState::held : store::JobState::queued;
    j.submit_ms = unix_millis();
    return add_submitted(std::move(j), s.array);
}

// One job, or an array's elements (each its command with `{}` replaced) in one transaction.
std::string QueueServer::add_submitted(store::JobRecord j, const JobArray& array) {
    if (array.empty()) {
        Result<std::int64_t> id = store_->queue_jobs().add_job(j);
        if (!id.ok()) return refusal_line(id.error());
        j.id = *id;
        jobs_.open()[j.id] = j;
        return answer_line({{"id", j.id}, {"state", store::state_name(j.state)}});
    }
    std::vector<store::JobRecord> elements(array.indices.size(), j);
    for (std::size_t k = 0; k < elements.size(); ++k) {
        elements[k].argv = element_argv(j.argv, array.values[k], array.append);
        elements[k].array_index = array.indices[k];
    }
    Result<std::vector<std::int64_t>> ids = store_->queue_jobs().add_jobs(elements, true);
    if (!ids.ok()) return refusal_line(ids.error());
    for (std::size_t k = 0; k < elements.size(); ++k) {
        elements[k].id = (*ids)[k];
        elements[k].array_id = ids->front();
        jobs_.open()[elements[k].id] = std::move(elements[k]);
    }
    return answer_line(
        {{"id", ids->front()}, {"ids", *ids}, {"array", ids->front()}, {"state", store::state_name(j.state)}});
}

// cancel: a waiting job leaves the queue now; a running one ends with its whole tree.
Result<std::string> QueueServer::cancel_job(store::JobRecord j, double grace_seconds, std::int64_t now) {
    if (j.state == store::JobState::queued || j.state == store::JobState::held) {
        if (!store_->queue_jobs()
                 .change_job_state(j.id, {store::JobState::queued, store::JobState::held}, store::JobState::cancelled,
                                   now, std::nullopt, "cancelled before it started")
                 .value_or(false))
            return std::string();  // it moved on meanwhile: nothing to say
        j.state = store::JobState::cancelled;
        j.end_ms = now;
        j.note = "cancelled before it started";
        job_final(j);
        return std::string("cancelled");
    }
    if (auto it = running_.find(j.id); it != running_.end()) {
        cancel_running(*it->second, grace_seconds);
        return std::string("cancelling");
    }
    return std::string("already ") + state_name(j.state);
}

// hold and release: between queued and held, nothing else.
Result<std::string> QueueServer::hold_job(const store::JobRecord& j, bool hold, std::int64_t now) {
    const store::JobState from = hold ? store::JobState::queued : store::JobState::held;
    const store::JobState to = hold ? store::JobState::held : store::JobState::queued;
    if (!store_->queue_jobs().change_job_state(j.id, {from}, to, now).value_or(false))
        return make_error("job " + std::to_string(j.id) + " is " + store::state_name(j.state) +
                          (hold ? ": only a queued job can be held" : ": only a held job can be released"));
    jobs_.open()[j.id].state = to;
    return std::string(store::state_name(to));
}

// restart: a new job with an ended one's spec (its command, directory, environment, resources,
// name, priority and dependencies), queued now under the same owner; the old job stays as it ended.
std::string QueueServer::restart(const Client& c, std::int64_t id) {
    Result<store::JobRecord> j = jobs_.find(id);
    if (!j.ok()) return refusal_line(j.error());
    if (c.peer.uid != 0 && c.peer.uid != j->owner_uid)
        return refusal_line(make_error(ErrorCode::permission_denied, "job " + std::to_string(id) + " belongs to " +
                                                                         users_.name(j->owner_uid) +
                                                                         ": only its owner or root may restart it"));
    if (!store::is_final(j->state))
        return refusal_line(make_error(ErrorCode::invalid_argument,
                                       "job " + std::to_string(id) + " is " + store::state_name(j->state) +
                                           ": only an ended job is restarted (baton cancel ends it first)"));
    store::JobRecord fresh;
    fresh.owner_uid = j->owner_uid;
    fresh.name = j->name;
    fresh.argv = j->argv;
    fresh.cwd = j->cwd;
    fresh.env = j->env;
    fresh.request = j->request;
    fresh.priority = j->priority;
    fresh.after = j->after;
    fresh.after_ok = j->after_ok;
    fresh.array_id = j->array_id;  // (an array's element again: its index, and its array's --max-parallel)
    fresh.array_index = j->array_index;
    fresh.state = store::JobState::queued;
    fresh.submit_ms = unix_millis();
    Result<std::int64_t> added = store_->queue_jobs().add_job(fresh);
    if (!added.ok()) return refusal_line(added.error());
    fresh.id = *added;
    jobs_.open()[fresh.id] = fresh;
    return answer_line({{"id", fresh.id}, {"state", store::state_name(fresh.state)}, {"from", id}});
}

// clean: the caller's ended jobs (root: everyone's) leave the store, and their directories (logs,
// status) go; their runs stay in the history. A job an open job waits for (--after) stays.
std::string QueueServer::clean(const Client& c, bool successful_only) {
    std::set<std::int64_t> keep;
    for (const auto& [id, j] : jobs_.open()) keep.insert(j.after.begin(), j.after.end());
    const std::optional<std::uint32_t> owner = c.peer.uid == 0 ? std::nullopt : std::optional(c.peer.uid);
    Result<std::vector<std::int64_t>> removed = store_->queue_jobs().remove_ended_jobs(owner, successful_only, keep);
    if (!removed.ok()) return refusal_line(removed.error());
    for (std::int64_t id : *removed) remove_tree(options_.jobs_dir + "/" + std::to_string(id));
    return answer_line({{"removed", *removed}});
}

// pause and resume: a running job's whole tree stopped and continued by its supervisor (SIGUSR1,
// SIGUSR2: job_shim.hpp); its GPUs and CPUs stay its own meanwhile. Asking again is no error.
Result<std::string> QueueServer::pause_job(const store::JobRecord& j, bool pause, std::int64_t now) {
    auto it = running_.find(j.id);
    if (j.state != store::JobState::running || it == running_.end())
        return make_error("job " + std::to_string(j.id) + " is " + store::state_name(j.state) +
                          ": only a running job can be " +
                          (pause ? "paused (baton hold keeps a queued one from starting)" : "resumed"));
    if (j.paused_ms.has_value() == pause) return std::string(pause ? "already paused" : "not paused");
    if (it->second->cancelling) return std::string("cancelling");
    const Running& r = *it->second;
    if (const int e = os::signal_process(r.pid, r.start_ticks, pause ? SIGUSR1 : SIGUSR2); e != 0)
        return make_error("job " + std::to_string(j.id) + ": cannot signal its supervisor (pid " +
                          std::to_string(r.pid) + "): " + std::strerror(e));
    const std::optional<std::int64_t> since = pause ? std::optional<std::int64_t>(now) : std::nullopt;
    if (Result<bool> kept = store_->queue_jobs().set_job_paused(j.id, since); !kept.ok())
        std::fprintf(stderr, "baton: job %lld: %s\n", static_cast<long long>(j.id), kept.error().message.c_str());
    jobs_.open()[j.id].paused_ms = since;
    set_paused_root(static_cast<std::uint32_t>(r.pid), pause);
    return std::string(pause ? "paused" : "running");
}

// retry: an ended job queued again, as its next attempt.
Result<std::string> QueueServer::retry_job(const store::JobRecord& j, const Client& c) {
    if (!store_->queue_jobs().requeue_job(j.id, "retried by " + users_.name(c.peer.uid)).value_or(false))
        return make_error("job " + std::to_string(j.id) + " is " + store::state_name(j.state) +
                          ": only an ended job can be retried");
    Result<store::JobRecord> again = store_->queue_jobs().job(j.id);
    if (again.ok()) jobs_.open()[j.id] = *again;
    return std::string("queued");
}

std::string QueueServer::change(const Client& c, const Request& r) {
    // Every job is the caller's (or the caller is root) before any is changed.
    for (std::int64_t id : r.jobs) {
        Result<store::JobRecord> j = jobs_.find(id);
        if (!j.ok()) return refusal_line(j.error());
        if (c.peer.uid != 0 && c.peer.uid != j->owner_uid)
            return refusal_line(make_error(ErrorCode::permission_denied,
                                           "job " + std::to_string(id) + " belongs to " + users_.name(j->owner_uid) +
                                               ": only its owner or root may " + op_name(r.op) + " it"));
    }
    const std::int64_t now = unix_millis();
    nlohmann::json done = nlohmann::json::array();
    for (std::int64_t id : r.jobs) {
        const store::JobRecord j = *jobs_.find(id);
        Result<std::string> outcome = make_error(ErrorCode::invalid_argument, "not a change");
        switch (r.op) {
            case Op::cancel:
                outcome = cancel_job(j, r.grace_seconds, now);
                break;
            case Op::hold:
            case Op::release:
                outcome = hold_job(j, r.op == Op::hold, now);
                break;
            case Op::retry:
                outcome = retry_job(j, c);
                break;
            case Op::pause:
            case Op::resume:
                outcome = pause_job(j, r.op == Op::pause, now);
                break;
            default:
                break;
        }
        if (!outcome.ok()) return refusal_line(outcome.error());
        done.push_back({{"id", id}, {"state", *outcome}});
    }
    return answer_line({{"jobs", done}});
}

std::string QueueServer::logs(const Client& c, const Request& r, std::string& tail) {
    Result<store::JobRecord> j = jobs_.find(r.jobs.front());
    if (!j.ok()) return refusal_line(j.error());
    if (c.peer.uid != 0 && c.peer.uid != j->owner_uid)
        return refusal_line(make_error(ErrorCode::permission_denied, "job " + std::to_string(j->id) + " belongs to " +
                                                                         users_.name(j->owner_uid) +
                                                                         ": only its owner or root may read its logs"));
    const std::string path = attempt_dir(j->id, j->attempt) + (r.stderr_stream ? "/stderr" : "/stdout");
    const bool ended = store::is_final(j->state);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    std::uint64_t size = 0;
    if (fd >= 0) {
        struct stat st {};
        if (::fstat(fd, &st) == 0) size = static_cast<std::uint64_t>(st.st_size);
        if (r.offset < size) {
            tail.resize(static_cast<std::size_t>(std::min<std::uint64_t>(size - r.offset, kMaxLogChunk)));
            const ssize_t n = ::pread(fd, tail.data(), tail.size(), static_cast<off_t>(r.offset));
            tail.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        }
        ::close(fd);
    }
    return answer_line({{"bytes", tail.size()},
                        {"offset", r.offset + tail.size()},
                        {"size", size},
                        {"state", j->state},
                        {"ended", ended}});
}

}  // namespace baton::queue
