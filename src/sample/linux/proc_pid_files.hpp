// Parsers for the per-process files read once per process (status, cmdline; cgroup_owner.hpp reads cgroup) and
// for /proc/PID/io.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::os {

struct PidStatus {
    std::optional<std::uint32_t> real_uid;
    // The pid in the innermost pid namespace (last NSpid value), when the line exists.
    std::optional<std::uint32_t> innermost_pid;
};

void parse_pid_status(std::string_view text, PidStatus& out);

// NUL-separated arguments joined with single spaces; trailing NULs dropped. Empty for
// kernel threads and zombies.
void join_cmdline(std::string_view raw, std::string& out);

struct PidIo {
    std::uint64_t read_bytes = 0, write_bytes = 0;  // storage-level bytes
};

bool parse_pid_io(std::string_view text, PidIo& out);

// /proc/PID/schedstat of the thread-group leader: "runtime_ns run_delay_ns switches_in".
// While both the runtime and the switch-in count stay the same, the task has not run.
struct PidSchedStat {
    std::uint64_t runtime_ns = 0;
    std::uint64_t switches_in = 0;  // times the task was put on a CPU
};

bool parse_pid_schedstat(std::string_view text, PidSchedStat& out);

}  // namespace baton::os
