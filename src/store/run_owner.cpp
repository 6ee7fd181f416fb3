#include "store/run_owner.hpp"

#include <cerrno>
#include <csignal>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

#include "sample/linux/proc_pid_stat.hpp"

namespace baton {

namespace {

std::string small_file(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    std::string text = s.str();
    if (text.size() > 4096) text.resize(4096);  // both files are one short line
    return text;
}

std::string boot_id() {
    std::string id = small_file("/proc/sys/kernel/random/boot_id");
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id;
}

}  // namespace

std::optional<std::uint64_t> process_start_ticks(std::int64_t pid, const std::string& proc_root) {
    if (pid <= 0) return std::nullopt;
    const std::string text = small_file(proc_root + "/" + std::to_string(pid) + "/stat");
    os::PidStat st;
    if (text.empty() || !os::parse_pid_stat(text, st)) return std::nullopt;
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
