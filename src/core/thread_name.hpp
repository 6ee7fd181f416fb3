#pragma once

// Names the calling thread (at most 15 characters) so `top -H`, `ps -L` and /proc/PID/task/*/comm
// tell baton's threads apart: which one spends the agent's CPU is then a glance, not a guess.

#include <sys/prctl.h>

namespace baton {

inline void name_this_thread(const char* name) {
    ::prctl(PR_SET_NAME, name);
}

}  // namespace baton
