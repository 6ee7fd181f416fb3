// Completion callbacks: a shell command run when a queued job ends for good (done, failed,
// cancelled, lost): the job's own (`baton submit --on-end CMD`) and the admin's (`[queue] on_end`),
// each as the job's owner, in a process group of its own, killed (SIGTERM, then SIGKILL 2 s later)
// once past its timeout ([queue] on_end_timeout), so a callback that hangs costs the agent nothing
// but a pid to watch. The agent is never blocked: it starts them and reaps them once a second.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "queue/job_starter.hpp"
#include "sample/linux/tree_end.hpp"

namespace baton::queue {

// What a callback is told of the job that ended.
struct EndedJob {
    std::int64_t id = 0;
    std::string name, status, user;  // status: done, failed, cancelled, lost
    std::optional<int> exit_status;  // as a shell says it; none when it never ran
};

// `command` with {id}, {name}, {status}, {exit} and {user} replaced by the job's values, each quoted
// for sh (a job's name is any text its owner chose); {exit} is empty when it never ran.
std::string callback_command(const std::string& command, const EndedJob& end);

// The callback's environment: PATH, the owner's HOME, USER, LOGNAME and SHELL, and BATON_JOB_ID,
// BATON_JOB_NAME, BATON_JOB_STATUS, BATON_JOB_EXIT ("NAME=value" strings).
std::vector<std::string> callback_environment(const EndedJob& end, const JobOwner& owner);

class JobCallbacks {
  public:
    JobCallbacks() = default;
    ~JobCallbacks();  // those still running are left to finish on their own
    JobCallbacks(const JobCallbacks&) = delete;
    JobCallbacks& operator=(const JobCallbacks&) = delete;

    // Starts `sh -c command` as `owner` (the agent must be root for another user), from `cwd` (else
    // /), its output appended to `log_fd` (the agent's log), to be killed `timeout` seconds from now.
    // `what` names it in the log ("job 12's --on-end command").
    Status start(const std::string& command, const JobOwner& owner, const std::vector<std::string>& env,
                 const std::string& cwd, int log_fd, double timeout, std::string what);
    // Reaps those that ended (saying a non-zero exit in the log) and kills those past their time
    // (`now`: monotonic seconds). Returns how many still run.
    std::size_t check(double now);

  private:
    struct Running {
        pid_t pid;
        double deadline;  // its timeout's end
        std::string what;
        double timeout;
        os::TreeEnd ending;  // begun at the deadline, 2 s of grace
    };
    std::vector<Running> running_;
};

}  // namespace baton::queue
