// A queued job's state: parsed from its name where it enters (the store's rows, a reply read
// back), a name only where it leaves (the store, JSON, text). No state is a string in logic.
#pragma once

#include <optional>
#include <string>

namespace baton::store {

enum class JobState { queued, held, starting, running, done, failed, cancelled, lost };

// "queued", "held", ...: the names `baton queue` prints and the store keeps.
const char* state_name(JobState s);
// The state of that name, or none.
std::optional<JobState> state_from_name(const std::string& name);
// done, failed, cancelled, lost: the job will not run again (unless retried, as a new attempt).
bool is_final(JobState s);

}  // namespace baton::store
