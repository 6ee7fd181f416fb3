#include "queue/job_end.hpp"

#include <cstring>

namespace baton::queue {

JobEnd job_end(const ShimStatus& st, const std::vector<diagnose::Finding>& findings) {
    JobEnd e;
    e.note = st.error;
    if (st.cancelled) {
        e.state = store::JobState::cancelled;
        if (e.note.empty()) e.note = "cancelled";
        return e;
    }
    if (st.started && st.exit_status == 0 && st.error.empty() && st.oom_kills == 0) {
        e.state = store::JobState::done;
        return e;
    }
    e.state = store::JobState::failed;
    if (e.note.empty()) {
        const char* abbrev = st.signal ? sigabbrev_np(st.signal) : nullptr;
        e.note = st.signal ? std::string("killed by SIG") + (abbrev ? abbrev : "?")
                           : "exit status " + std::to_string(st.exit_status);
    }
    for (const diagnose::Finding& f : findings)
        if (f.rule == "cuda_oom" || f.rule == "host_oom_kill") {
            e.oom = true;
            e.note += "; " + f.summary;
            break;
        }
    // The job's cgroup counted OOM kills: it ran out of its --mem, whatever the watch saw.
    if (st.oom_kills > 0 && !e.oom) {
        e.oom = true;
        e.note += "; out of memory: the kernel's OOM killer killed " + std::to_string(st.oom_kills) +
                  " process(es) of its cgroup";
    }
    return e;
}

}  // namespace baton::queue
