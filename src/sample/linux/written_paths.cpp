#include "sample/linux/written_paths.hpp"

#include <algorithm>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/files.hpp"

namespace baton::os {

namespace {

constexpr std::size_t kMaxPaths = 256;
constexpr int kMaxDescriptors = 4096;  // a process with more: the first ones are enough

std::string link_target(const std::string& link) {
    char target[4096];
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target);
    if (n <= 0 || n == static_cast<ssize_t>(sizeof target)) return {};
    return std::string(target, static_cast<std::size_t>(n));
}

}  // namespace

long fdinfo_flags(std::string_view text) {
    const std::size_t at = text.find("flags:");
    if (at == std::string_view::npos) return -1;
    std::string_view v = text.substr(at + 6);
    while (!v.empty() && (v.front() == '\t' || v.front() == ' ')) v.remove_prefix(1);
    long flags = 0;
    std::size_t digits = 0;
    while (digits < v.size() && digits < 12 && v[digits] >= '0' && v[digits] <= '7') {
        flags = flags * 8 + (v[digits] - '0');
        ++digits;
    }
    return digits ? flags : -1;
}

const std::vector<std::string>& WrittenPaths::paths(std::uint32_t pid, std::int64_t start_time_ms, double now) {
    Entry& e = cache_[pid];
    e.asked_at = now;
    if (e.start_time_ms == start_time_ms && now - e.read_at < refresh_seconds) return e.paths;
    e.start_time_ms = start_time_ms;
    e.read_at = now;
    e.paths.clear();
    const std::string base = proc_root_ + "/" + std::to_string(pid);
    std::string cwd = link_target(base + "/cwd");
    if (!cwd.empty() && cwd[0] == '/') e.paths.push_back(std::move(cwd));
    DIR* d = ::opendir((base + "/fd").c_str());
    if (!d) return e.paths;
    int seen = 0;
    while (const dirent* de = ::readdir(d)) {
        if (de->d_name[0] == '.') continue;
        if (++seen > kMaxDescriptors || e.paths.size() >= kMaxPaths) break;
        std::string target = link_target(base + "/fd/" + de->d_name);
        // Regular files only: "socket:[...]", "pipe:[...]", "anon_inode:..." do not start with '/'; a
        // device is not a filesystem's space.
        if (target.empty() || target[0] != '/' || target.rfind("/dev/", 0) == 0) continue;
        const std::optional<std::string> info = read_small_file(base + "/fdinfo/" + de->d_name, 4096);
        const long flags = info ? fdinfo_flags(*info) : -1;
        if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) continue;
        if (std::find(e.paths.begin(), e.paths.end(), target) == e.paths.end()) e.paths.push_back(std::move(target));
    }
    ::closedir(d);
    return e.paths;
}

void WrittenPaths::forget_older_than(double before) {
    for (auto it = cache_.begin(); it != cache_.end();)
        it = it->second.asked_at < before ? cache_.erase(it) : std::next(it);
}

}  // namespace baton::os
