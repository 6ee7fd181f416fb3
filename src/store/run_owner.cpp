#include "store/run_owner.hpp"

#include <cerrno>
#include <csignal>
#include <limits>
#include <unistd.h>

#include "core/text_parse.hpp"
#include "sample/linux/kept_file.hpp"
#include "sample/linux/proc_pid_stat.hpp"

namespace baton::store {

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

std::string owner_token(const RunOwner& owner) {
    return std::to_string(owner.pid) + ":" + std::to_string(owner.start_ticks.value_or(0));
}

std::optional<RunOwner> parse_owner_token(std::string_view token) {
    const std::size_t colon = token.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 >= token.size() || colon > 10 ||
        token.size() - colon - 1 > 20)
        return std::nullopt;
    RunOwner o;
    const std::optional<std::uint64_t> pid_digits = text::parse_digits<std::uint64_t>(token.substr(0, colon));
    const std::optional<std::uint64_t> ticks_digits = text::parse_digits<std::uint64_t>(token.substr(colon + 1));
    if (!pid_digits || !ticks_digits) return std::nullopt;
    const std::uint64_t pid = *pid_digits, ticks = *ticks_digits;
    if (pid == 0 || pid > static_cast<std::uint64_t>(std::numeric_limits<pid_t>::max())) return std::nullopt;
    o.pid = static_cast<std::int64_t>(pid);
    if (ticks) o.start_ticks = ticks;
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

}  // namespace baton::store
