// The queue's groups (baton group): a name and how many of its jobs run at once, beside the GPU
// resources (scheduler.hpp counts a group's starting and running jobs against it). Anyone may add
// a group; only who added it, or root, changes or removes it; a group with open jobs stays.
// Runs on the queue thread.
#include <nlohmann/json.hpp>

#include "queue/queue_server.hpp"
#include "queue/queue_server_parts.hpp"
#include "store/history_jobs.hpp"

namespace baton::queue {

std::string QueueServer::groups() {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [name, g] : groups_) {
        unsigned running = 0, queued = 0;
        for (const auto& [id, j] : jobs_.open()) {
            const JobRequest* req = jobs_.request_of(j);
            if (!req || req->group != name) continue;
            if (j.state == store::JobState::starting || j.state == store::JobState::running)
                ++running;
            else
                ++queued;  // (queued or held)
        }
        out.push_back({{"name", name},
                       {"parallel", g.parallel},
                       {"owner", users_.name(g.owner_uid)},
                       {"running", running},
                       {"waiting", queued}});
    }
    return answer_line({{"groups", out}});
}

namespace {

Error not_theirs(const std::string& name, const std::string& owner, const char* what) {
    return make_error(ErrorCode::permission_denied,
                      "group " + name + " was added by " + owner + ": only they or root " + what + " it");
}

}  // namespace

std::string QueueServer::set_group(const Client& c, const std::string& name, unsigned parallel) {
    if (Status ok = check_group_name(name); !ok.ok()) return refusal_line(ok.error());
    store::JobGroup g{name, parallel, c.peer.uid};
    if (auto it = groups_.find(name); it != groups_.end()) {
        if (c.peer.uid != 0 && c.peer.uid != it->second.owner_uid)
            return refusal_line(not_theirs(name, users_.name(it->second.owner_uid), "may change"));
        g.owner_uid = it->second.owner_uid;
    }
    if (Status s = store_->queue_jobs().set_job_group(g); !s.ok()) return refusal_line(s.error());
    groups_[name] = g;
    return answer_line({{"group", name}, {"parallel", parallel}});
}

std::string QueueServer::remove_group(const Client& c, const std::string& name) {
    auto it = groups_.find(name);
    if (it == groups_.end())
        return refusal_line(make_error(ErrorCode::not_found, "no group " + name + " (baton group lists them)"));
    if (c.peer.uid != 0 && c.peer.uid != it->second.owner_uid)
        return refusal_line(not_theirs(name, users_.name(it->second.owner_uid), "may remove"));
    std::size_t open = 0;
    for (const auto& [id, j] : jobs_.open()) {
        const JobRequest* req = jobs_.request_of(j);
        open += req && req->group == name ? 1 : 0;
    }
    if (open)
        return refusal_line(make_error(ErrorCode::invalid_argument, "group " + name + " has " + std::to_string(open) +
                                                                        " open job(s): it is removed once they end"));
    if (Result<bool> removed = store_->queue_jobs().remove_job_group(name); !removed.ok())
        return refusal_line(removed.error());
    groups_.erase(it);
    return answer_line({{"group", name}, {"removed", true}});
}

}  // namespace baton::queue
