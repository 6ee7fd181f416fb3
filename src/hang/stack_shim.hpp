// The stack handler baton puts into every Python process of a job it starts (`baton run`, `baton
// launch`), with no change to the user's code: a directory on PYTHONPATH whose sitecustomize.py
// blocks a real-time signal in the main thread (so in every thread started after) and starts one thread
// of its own that takes it with sigwait() and writes every thread's stack with the standard library's
// faulthandler to DIR/PID.txt, holding the GIL; then it runs the user's own sitecustomize (the next one
// on sys.path), so nothing they had is lost. No system call of the script is interrupted by the signal
// (a C library that does not retry on EINTR would fail), and no thread's frames change while they are
// read (a signal handler's dump of a running thread can read freed frames and crash the process: seen
// in CI). A process whose GIL is held forever by C code gives no dump (the request says so).
// `baton stacks` and the hang verdict signal a process and read its file (stack_request.hpp); a
// healthy job pays one sleeping thread and one file per Python process.
//
// The file begins with a header the shim writes before it starts its thread:
//     # baton stacks: pid 1234 start 5678901 exe /usr/bin/python3.11
// (the process's pid, its start time in clock ticks after boot, its executable) and is renamed from
// PID.new to PID.txt once the handler is in place: a PID.txt whose header matches the live process
// says that signalling it dumps stacks instead of killing it (the default action of the signal). A
// reused pid, a process that exec'd another program, or one that was started by `python -I/-E/-S`
// (which skip PYTHONPATH or site) has no matching file and is never signalled.
#pragma once

#include <cstdint>
#include <optional>
#include <sys/types.h>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace baton::hang {

inline constexpr const char* kStacksDirVariable = "BATON_STACKS_DIR";
inline constexpr const char* kStacksSignalVariable = "BATON_STACKS_SIGNAL";
// "0": the shim does not install the automatic step hook (python/baton/_auto.py; --no-auto-hook).
inline constexpr const char* kAutoHookVariable = "BATON_AUTO_HOOK";

// The signal the shim takes: SIGRTMAX - 5 (59 with glibc). Not SIGUSR1 or SIGUSR2:
// Slurm, Lightning and submitit send those to training jobs for their own purposes; libraries that
// use real-time signals take them from SIGRTMIN upwards.
int stacks_signal();

// The text of the shim's sitecustomize.py.
std::string_view shim_source();

// Writes SHIM_DIR/sitecustomize.py (SHIM_DIR made 0700 when missing) and makes STACKS_DIR (0700)
// when missing. Errors name the path.
Status install_shim(const std::string& shim_dir, const std::string& stacks_dir);
// SHIM_DIR alone, made `mode` (kept so when it was there): one shim for many jobs, each with its own
// STACKS_DIR (the queue's agent writes it once; 0755 when its jobs run as other users).
Status install_shim_dir(const std::string& shim_dir, mode_t mode);

// The variables a job needs: PYTHONPATH with SHIM_DIR first (then the inherited value, if any and
// not empty: an empty entry would put the working directory on the path), BATON_STACKS_DIR and
// BATON_STACKS_SIGNAL.
std::vector<std::pair<std::string, std::string>> shim_environment(const std::string& shim_dir,
                                                                  const std::string& stacks_dir,
                                                                  const std::optional<std::string>& python_path);

// The header of a stacks file, parsed; nullopt when `line` is not one.
struct StacksHeader {
    std::int64_t pid = 0;
    std::uint64_t start_ticks = 0;
    std::string exe;
};
std::optional<StacksHeader> parse_stacks_header(std::string_view line);

}  // namespace baton::hang
