// The admin's idle-holder policy ([queue] idle_policy, idle_minutes): a running queued job whose GPUs
// have all been at 0 % utilisation for idle_minutes is warned about, requeued (its GPUs go to the jobs
// that wait; it starts again later as its next attempt) or cancelled. Only the queue's own jobs, never
// a process the queue did not start; a paused job (baton pause) is idle on purpose and never judged; a
// job without GPUs is never judged. A pure function of what the agent sees each second, so that the
// rules are tested alone; queue_server.cpp acts on its verdicts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace baton::queue {

enum class IdlePolicy { off, warn, requeue, cancel };

// "off", "warn", "requeue", "cancel" (the config's words); none for another word.
std::optional<IdlePolicy> idle_policy_from_name(const std::string& name);
const char* idle_policy_name(IdlePolicy p);

struct IdleJob {
    std::int64_t id = 0;
    bool paused = false;
    // Its GPUs' utilisation now, by index (none: not known this second).
    std::vector<std::pair<unsigned, std::optional<double>>> gpus;
};

class IdleWatch {
  public:
    // One second of the running jobs at `now` (seconds, monotonic): the jobs idle for `minutes` or
    // more that were not judged yet, each with the sentence that says why ("its GPU 1 was at 0 %
    // for 30m"). A job that works again, or ended, starts over.
    std::vector<std::pair<std::int64_t, std::string>> judge(const std::vector<IdleJob>& jobs, double now,
                                                            double minutes);

  private:
    std::map<std::int64_t, double> idle_since_;
    std::map<std::int64_t, bool> judged_;
};

}  // namespace baton::queue
