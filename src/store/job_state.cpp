#include "store/job_state.hpp"

#include <iterator>

namespace baton::store {

namespace {

constexpr const char* kStateNames[] = {"queued", "held", "starting", "running", "done", "failed", "cancelled", "lost"};

}  // namespace

const char* state_name(JobState s) {
    return kStateNames[static_cast<int>(s)];
}

std::optional<JobState> state_from_name(const std::string& name) {
    for (int i = 0; i < static_cast<int>(std::size(kStateNames)); ++i)
        if (name == kStateNames[i]) return static_cast<JobState>(i);
    return std::nullopt;
}

bool is_final(JobState s) {
    return s == JobState::done || s == JobState::failed || s == JobState::cancelled || s == JobState::lost;
}

}  // namespace baton::store
