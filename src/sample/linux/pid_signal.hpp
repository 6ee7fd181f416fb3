// Signals (and renices) a process named by its pid and the start time it was seen with, so that a
// pid the kernel has handed to another process since is never hit (docs/security.md).
//
// Where the kernel has pidfds (Linux 5.3+): a pidfd is opened first, then the start time checked;
// from then on the pidfd names that one process, so pidfd_send_signal cannot reach a successor,
// and a renice is confirmed by the pidfd not having become readable (the process did not end) in
// the meantime. Elsewhere: the start time is checked just before kill(2)/setpriority(2), which
// leaves a window of microseconds, as `baton clean` always had.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>

namespace baton::os {

// A pidfd for `pid` (pidfd_open, Linux 5.3+), or -1 with errno (ENOSYS on older kernels, ESRCH when
// it is gone). The caller closes it; it turns readable when the process ends.
int open_pidfd(pid_t pid);

// The start time of `pid` (/proc/PID/stat's field 22, clock ticks after boot); 0 when it is gone,
// a zombie, or unreadable.
std::uint64_t process_start_ticks(pid_t pid, const std::string& proc_root = "/proc");

// Sends `sig` to the process `pid` if it is still the one that started at `start_ticks`. Returns 0,
// or an errno: ESRCH when it ended or the pid is another process's now, EPERM when not allowed.
int signal_process(pid_t pid, std::uint64_t start_ticks, int sig, const std::string& proc_root = "/proc");

// setpriority(PRIO_PROCESS, pid, nice) with the same check; 0 or an errno (ESRCH, EACCES, EPERM).
int renice_process(pid_t pid, std::uint64_t start_ticks, int nice, const std::string& proc_root = "/proc");

}  // namespace baton::os
