#include "queue/open_jobs.hpp"
#include "store/history_jobs.hpp"

#include <cstdio>

namespace baton::queue {

Result<store::JobRecord> OpenJobs::find(std::int64_t id) const {
    auto it = open_.find(id);
    if (it != open_.end()) return it->second;
    if (!store_) return make_error(ErrorCode::not_found, "no job " + std::to_string(id) + " in the queue");
    return store_->queue_jobs().job(id);
}

const JobRequest* OpenJobs::request_of(const store::JobRecord& j) {
    auto it = requests_.find(j.id);
    if (it != requests_.end() && it->second.first == j.request) return &it->second.second;
    Result<JobRequest> req = parse_request_json(j.request);
    if (!req.ok()) return nullptr;
    if (!open_.count(j.id)) {
        scratch_request_ = std::move(*req);
        return &scratch_request_;
    }
    auto& slot = requests_[j.id];
    slot = {j.request, std::move(*req)};
    return &slot.second;
}

void OpenJobs::record_state(std::int64_t id, const std::vector<store::JobState>& from, store::JobState to,
                            std::int64_t now_ms, std::optional<int> exit_status, const std::string& note) {
    if (!store_) return;
    if (Result<bool> r = store_->queue_jobs().change_job_state(id, from, to, now_ms, exit_status, note); !r.ok())
        std::fprintf(stderr, "baton: job %lld: cannot record its state %s: %s\n", static_cast<long long>(id),
                     store::state_name(to), r.error().message.c_str());
}

void OpenJobs::link_run(std::int64_t id, std::int64_t run_id) {
    if (store_)
        if (Status s = store_->queue_jobs().set_job_run(id, run_id); !s.ok())
            std::fprintf(stderr, "baton: job %lld: cannot link it to run %lld: %s\n", static_cast<long long>(id),
                         static_cast<long long>(run_id), s.error().message.c_str());
    auto it = open_.find(id);
    if (it != open_.end()) it->second.run_id = run_id;
}

void OpenJobs::close(std::int64_t id) {
    open_.erase(id);
    waiting_.erase(id);
    requests_.erase(id);
}

}  // namespace baton::queue
