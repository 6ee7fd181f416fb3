// Ending a process tree baton started, written once for all who do it (`baton run`, `baton launch`,
// a queued job's supervisor, a queue callback that ran past its timeout, `baton clean`, the
// scaling bench): a first signal (SIGTERM, or the stop signal being passed on), a grace for the
// processes to end by themselves, SIGKILL to what is left, and a bounded last wait, after which a
// process stuck in the kernel (state D) is reported rather than waited for without end.
//
// The tree's members are found by their parents (each thread's /proc children list, so a member
// that left the process group or the session is still found) and signalled by pid and start time
// through a pidfd where the kernel has them (pid_signal.hpp): a member that ended and whose pid was
// handed to another process meanwhile is never hit.
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <sys/types.h>
#include <vector>

namespace baton::os {

struct TreeMember {
    pid_t pid = 0;
    std::uint64_t start_ticks = 0;  // as read with the listing: the signal checks it
    char state = '?';               // /proc/PID/stat's: 'T' stopped, 'Z' a zombie, 'D' in the kernel
    std::string name;               // its comm
};

// This process's children (those it started, and the orphans it collected as a subreaper).
std::vector<pid_t> own_children();

// Every descendant of `root` now (its threads' children, theirs, ...), whatever process group or
// session each moved to: what a group signal misses. Parents before their children.
std::vector<TreeMember> descendants(pid_t root);

// `pid` as /proc says it now (state '?' and no name when it is gone).
TreeMember describe_process(pid_t pid);

// `sig` to the process group `group` (when > 0) and to every descendant of `root` by pid and start
// time; how many it reached (the group counts one). The descendants are listed before the first
// signal: a root that dies of it hands its children to another parent, and they would be listed no
// more.
int signal_tree(pid_t root, pid_t group, int sig);

// Makes this process the subreaper of its descendants (PR_SET_CHILD_SUBREAPER): the orphans of the
// tree become its children, so that they stay in reach and end with it.
void become_subreaper();

// One tree's ending. Non-blocking: a watch loop calls begin() when the tree must go and step() on
// each turn; end() does it all in one call.
class TreeEnd {
  public:
    struct Tree {
        // Sends `sig` to every process of the tree; returns how many it reached (for SIGKILL: the
        // number killed() reports).
        std::function<int(int sig)> signal;
        // Whether any process of the tree is left; may reap.
        std::function<bool()> alive;
    };
    enum class Phase {
        running,  // not asked to end
        grace,    // signalled, waiting for it to end by itself
        killed,   // SIGKILLed, the last wait under way
        gone,     // nothing left
        stuck,    // still there after the last wait
    };

    TreeEnd(Tree tree, double last_wait_seconds);

    // Sends `sig` to the tree. The first call starts the grace; a later one may bring its end
    // forward, never push it back; once the tree was SIGKILLed it only sends the signal.
    void begin(double now, double grace_seconds, int sig = SIGTERM);
    // Moves the ending on at `now`: gone once alive() says nothing is left, SIGKILL when the grace
    // has passed, stuck when the last wait has too. Nothing while running.
    Phase step(double now);
    // begin(), then step() every 10 ms until the tree is gone or stuck (at once when nothing is left).
    Phase end(double grace_seconds, int sig = SIGTERM);

    Phase phase() const { return phase_; }
    bool ending() const { return phase_ != Phase::running; }
    // The processes the SIGKILL reached (0 when the grace sufficed).
    int killed() const { return killed_; }
    // When step() next has work of its own (the grace's or the last wait's end): a loop's sleep bound.
    double deadline() const { return deadline_; }

  private:
    Tree tree_;
    double last_wait_;
    Phase phase_ = Phase::running;
    double deadline_ = std::numeric_limits<double>::infinity();
    int killed_ = 0;
};

}  // namespace baton::os
