#include "store/run_owner.hpp"

#include <cerrno>
#include <csignal>
#include <limits>
#include <unistd.h>

#include "sample/linux/kept_file.hpp"
#include "sample/linux/proc_pid_stat.hpp"

namespace baton {

namespace {

// (files are read as the sampler reads /proc: os::read_file, bounded and never blocking)
std::string boot_id() {
    os::ReadBuffer buf;
    std::string id = os::read_file("/proc/sys/kernel/random/boot_id", buf) ? std::string(buf.view()) : "";
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id;
}

}  // namespace

std::optional<std::uint64_t> process_start_ticks(std::int64_t pid, const std::string& proc_root) {
    if (pid <= 0) return std::nullopt;
    os::ReadBuffer buf;
    os::PidStat st;
    if (!os::read_file(proc_root + "/" + std::to_string(pid) + "/stat", buf) || !os::parse_pid_stat(buf.view(), st))
        return std::nullopt;
    return st.starttime;
}

RunOwner current_owner() {
    RunOwner o;
    o.pid = getpid();
    o.start_ticks = process_start_ticks(o.pid);
    o.boot_id = boot_id();
    return o;
}

bool owner_alive(const RunOwner& owner) {
    // (a hostile file's pid must not become kill(-1, 0) or a process group)
    if (owner.pid <= 0 || owner.pid > std::numeric_limits<pid_t>::max()) return false;
    if (!owner.boot_id.empty()) {
        const std::string now = boot_id();
        if (!now.empty() && now != owner.boot_id) return false;  // recorded before a reboot
    }
    if (owner.pid != getpid() && kill(static_cast<pid_t>(owner.pid), 0) != 0 && errno == ESRCH) return false;
    if (owner.start_ticks) {
        const std::optional<std::uint64_t> now = process_start_ticks(owner.pid);
        if (now && *now != *owner.start_ticks) return false;  // the pid was reused
    }
    return true;
}

}  // namespace baton
