#include "sample/linux/written_paths.hpp"

#include <algorithm>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.hpp"

namespace baton::os {

namespace {

constexpr std::size_t kMaxPaths = 256;
constexpr int kMaxDescriptors = 4096;  // a process with more: the first ones are enough

// A link's target ("" when unreadable or too long), `name` relative to the directory `dir` (AT_FDCWD:
// the working directory, or an absolute name).
std::string link_target(int dir, const char* name) {
    char target[4096];
    const ssize_t n = ::readlinkat(dir, name, target, sizeof target);
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

namespace {

// Whether descriptor `name` of the fd directory `dir` (of /proc/PID `base`) is open for writing. The kernel gives each
// /proc/PID/fd link the open mode as its permission bits (r-x read, -wx write, rwx both): one
// fstatat, where fdinfo's flags cost an open, a read and a close, for every descriptor a trainer
// holds (hundreds of dataset shards, read-only). A link without either bit (an O_PATH descriptor, or
// a /proc that does not say) falls back to fdinfo.
bool open_for_writing(int dir, const char* name, const std::string& base) {
    struct stat st {};
    if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) &&
        (st.st_mode & (S_IRUSR | S_IWUSR)) != 0)
        return (st.st_mode & S_IWUSR) != 0;
    const std::optional<std::string> info = read_small_file(base + "/fdinfo/" + name, 4096);
    const long flags = info ? fdinfo_flags(*info) : -1;
    return flags >= 0 && (flags & O_ACCMODE) != O_RDONLY;
}

}  // namespace

const std::vector<std::string>& WrittenPaths::paths(std::uint32_t pid, std::int64_t start_time_ms, double now) {
    Entry& e = cache_[pid];
    e.asked_at = now;
    if (e.start_time_ms == start_time_ms && now - e.read_at < refresh_seconds) return e.paths;
    e.start_time_ms = start_time_ms;
    e.read_at = now;
    e.paths.clear();
    const std::string base = proc_root_ + "/" + std::to_string(pid);
    std::string cwd = link_target(AT_FDCWD, (base + "/cwd").c_str());
    if (!cwd.empty() && cwd[0] == '/') e.paths.push_back(std::move(cwd));
    DIR* d = ::opendir((base + "/fd").c_str());
    if (!d) return e.paths;
    const int dir = ::dirfd(d);
    int seen = 0;
    while (const dirent* de = ::readdir(d)) {
        if (de->d_name[0] == '.') continue;
        if (++seen > kMaxDescriptors || e.paths.size() >= kMaxPaths) break;
        if (!open_for_writing(dir, de->d_name, base)) continue;
        std::string target = link_target(dir, de->d_name);
        // Regular files only: "socket:[...]", "pipe:[...]", "anon_inode:..." do not start with '/'; a
        // device is not a filesystem's space.
        if (target.empty() || target[0] != '/' || target.rfind("/dev/", 0) == 0) continue;
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
