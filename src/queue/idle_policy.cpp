#include "queue/idle_policy.hpp"

#include <set>

#include <fmt/format.h>

#include "core/units.hpp"

namespace baton::queue {

std::optional<IdlePolicy> idle_policy_from_name(const std::string& name) {
    for (IdlePolicy p : {IdlePolicy::off, IdlePolicy::warn, IdlePolicy::requeue, IdlePolicy::cancel})
        if (name == idle_policy_name(p)) return p;
    return std::nullopt;
}

const char* idle_policy_name(IdlePolicy p) {
    switch (p) {
        case IdlePolicy::off:
            return "off";
        case IdlePolicy::warn:
            return "warn";
        case IdlePolicy::requeue:
            return "requeue";
        case IdlePolicy::cancel:
            return "cancel";
    }
    return "off";
}

std::vector<std::pair<std::int64_t, std::string>> IdleWatch::judge(const std::vector<IdleJob>& jobs, double now,
                                                                   double minutes) {
    std::vector<std::pair<std::int64_t, std::string>> out;
    std::set<std::int64_t> seen;
    for (const IdleJob& j : jobs) {
        seen.insert(j.id);
        bool idle = !j.gpus.empty() && !j.paused;
        for (const auto& [index, util] : j.gpus) idle = idle && util && *util <= 0;
        if (!idle) {
            idle_since_.erase(j.id);
            judged_.erase(j.id);
            continue;
        }
        const double since = idle_since_.try_emplace(j.id, now).first->second;
        if (now - since < minutes * 60 || judged_[j.id]) continue;
        judged_[j.id] = true;
        std::string gpus;
        for (const auto& [index, util] : j.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(index);
        const bool many = j.gpus.size() > 1;
        out.emplace_back(j.id,
                         fmt::format("its GPU{} {} {} at 0 % for {}", many ? "s" : "", gpus, many ? "were" : "was",
                                     format_elapsed(static_cast<std::int64_t>(now - since + 0.5))));
    }
    for (auto it = idle_since_.begin(); it != idle_since_.end();)
        it = seen.count(it->first) ? std::next(it) : idle_since_.erase(it);
    for (auto it = judged_.begin(); it != judged_.end();)
        it = seen.count(it->first) ? std::next(it) : judged_.erase(it);
    return out;
}

}  // namespace baton::queue
