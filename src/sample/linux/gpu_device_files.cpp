#include "sample/linux/gpu_device_files.hpp"

#include <algorithm>
#include <dirent.h>
#include <unistd.h>

#include "core/text_parse.hpp"

namespace baton::os {

std::optional<unsigned> nvidia_minor(std::string_view target, std::string_view dev_root) {
    while (dev_root.size() > 1 && dev_root.back() == '/') dev_root.remove_suffix(1);
    if (target.size() <= dev_root.size() || target.substr(0, dev_root.size()) != dev_root) return std::nullopt;
    target.remove_prefix(dev_root.size());
    if (target.substr(0, 7) != "/nvidia") return std::nullopt;
    target.remove_prefix(7);
    if (target.empty() || target.size() > 4) return std::nullopt;  // "nvidiactl", "nvidia-uvm", ...
    return text::parse_digits<unsigned>(target);
}

GpuDeviceFiles::GpuDeviceFiles(std::string proc_root, std::string dev_root)
    : proc_root_(std::move(proc_root)), dev_root_(std::move(dev_root)) {}

const std::vector<unsigned>& GpuDeviceFiles::minors(std::uint32_t pid, std::int64_t start_time_ms,
                                                    double cpu_seconds_total, double now) {
    auto [it, first_seen] = cache_.try_emplace(pid);
    Entry& e = it->second;
    e.asked_at = now;
    const bool known = !first_seen && e.start_time_ms == start_time_ms;
    if (known) {
        const bool ran = cpu_seconds_total != e.cpu_seconds_at_read;
        if (now - e.read_at < refresh_seconds || (!ran && now < e.idle_due)) return e.minors;
    }
    e.idle_due = now + (known ? idle_refresh_seconds : idle_refresh_seconds * (0.5 + 0.5 * (pid % 61) / 61.0));
    e.start_time_ms = start_time_ms;
    e.read_at = now;
    e.cpu_seconds_at_read = cpu_seconds_total;
    ++reads_;
    e.minors.clear();
    const std::string dir = proc_root_ + "/" + std::to_string(pid) + "/fd";
    DIR* d = opendir(dir.c_str());
    if (!d) return e.minors;
    char target[256];
    while (const dirent* de = readdir(d)) {
        if (de->d_name[0] == '.') continue;
        const std::string link = dir + "/" + de->d_name;
        const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
        if (n <= 0) continue;
        if (std::optional<unsigned> m = nvidia_minor(std::string_view(target, static_cast<std::size_t>(n)), dev_root_))
            e.minors.push_back(*m);
    }
    closedir(d);
    std::sort(e.minors.begin(), e.minors.end());
    e.minors.erase(std::unique(e.minors.begin(), e.minors.end()), e.minors.end());
    return e.minors;
}

void GpuDeviceFiles::forget_older_than(double before) {
    for (auto it = cache_.begin(); it != cache_.end();)
        it = it->second.asked_at < before ? cache_.erase(it) : std::next(it);
}

}  // namespace baton::os
