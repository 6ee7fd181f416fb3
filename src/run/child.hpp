// Starting and stopping the command `baton run` watches: its own process group, the terminal
// handed to it when baton has one, a parent-death signal so it cannot outlive a killed baton,
// and baton as the subreaper of its tree so that orphaned workers stay visible and end with it.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "core/result.hpp"

namespace baton::run {

// How a command starts besides its words.
struct ChildStart {
    // The command's stderr goes to stderr_fd() instead (a pseudo-terminal when baton's stderr is a
    // terminal and the output is not redirected, so the command still sees one; a pipe otherwise),
    // for baton to pass on and read.
    bool capture_stderr = false;
    // >= 0: the command's stdout goes to this descriptor (`baton tune`'s trial log), and it gets
    // /dev/null as stdin and never the terminal: Ctrl-C reaches baton, which ends the trial itself.
    int output_fd = -1;
};

class Child {
  public:
    // Starts argv[0] (looked up on PATH) in a new process group (os::spawn). Errors: the command
    // cannot be found (not_found) or executed (not_executable); a pipe or fork failure (failed).
    static Result<Child> start(const std::vector<std::string>& argv, const ChildStart& how = {});

    Child(Child&& other) noexcept;
    Child& operator=(Child&&) = delete;
    ~Child();  // gives the terminal back if it was handed over

    pid_t pid() const { return pid_; }
    // The read end of the command's stderr (non-blocking), or -1 when not captured.
    int stderr_fd() const { return stderr_fd_; }
    pid_t group() const { return pid_; }

    // Sends `sig` to the whole process group.
    void signal_group(int sig) const;

    // Reaps the command if it exited; true once it has. Also reaps orphans of the tree that
    // were reparented to baton (the subreaper). When the command was stopped (Ctrl-Z), does what
    // a shell does (follow_stop) before it returns.
    bool poll_exit();
    // The shell's convention: the exit code, or 128 + N when signal N ended it.
    int exit_status() const { return status_; }
    int terminating_signal() const { return signal_; }

    // Ends every process left in the tree (os::TreeEnd): SIGTERM to the group and to baton's
    // remaining children, then SIGKILL after `grace_seconds`, then at most a second's wait.
    // Returns how many had to be killed.
    int end_tree(double grace_seconds);

  private:
    Child() = default;
    void follow_stop();
    pid_t pid_ = -1;
    bool exited_ = false;
    int status_ = 0;
    int signal_ = 0;
    bool gave_terminal_ = false;
    int stderr_fd_ = -1;
};

}  // namespace baton::run
