#include "sample/linux/mounts.hpp"

#include <algorithm>
#include <array>

namespace baton::os {

namespace {

constexpr std::size_t kMaxMounts = 4096;

// node_exporter's defaults (--collector.filesystem.fs-types-exclude, mount-points-exclude).
bool pseudo_type(std::string_view t) {
    static constexpr std::array<std::string_view, 23> kTypes = {
        "autofs",   "binfmt_misc", "bpf",        "cgroup",     "cgroup2",   "configfs", "debugfs", "devpts",
        "devtmpfs", "fusectl",     "hugetlbfs",  "iso9660",    "mqueue",    "nsfs",     "overlay", "proc",
        "procfs",   "pstore",      "rpc_pipefs", "securityfs", "selinuxfs", "squashfs", "sysfs"};
    return t == "tracefs" || t == "erofs" || t == "ramfs" || std::find(kTypes.begin(), kTypes.end(), t) != kTypes.end();
}

bool under(std::string_view path, std::string_view dir) {
    return path.substr(0, dir.size()) == dir && (path.size() == dir.size() || path[dir.size()] == '/');
}

bool excluded_point(std::string_view p) {
    for (std::string_view d : {"/dev", "/proc", "/sys"})
        if (under(p, d)) return true;
    for (std::string_view d : {"/run/credentials", "/var/lib/docker", "/var/lib/containers/storage",
                               "/var/lib/kubelet/pods", "/run/containerd", "/run/netns", "/snap"})
        if (p.size() > d.size() && under(p, d)) return true;
    return false;
}

// mountinfo's escapes: \040 (space), \011 (tab), \012 (newline), \134 (backslash).
std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            const std::string_view o = s.substr(i + 1, 3);
            if (o.size() == 3 && std::all_of(o.begin(), o.end(), [](char c) { return c >= '0' && c <= '7'; })) {
                out.push_back(static_cast<char>((o[0] - '0') * 64 + (o[1] - '0') * 8 + (o[2] - '0')));
                i += 3;
                continue;
            }
        }
        out.push_back(s[i]);
    }
    return out;
}

std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> f;
    while (!line.empty()) {
        const std::size_t sp = line.find(' ');
        f.push_back(line.substr(0, sp));
        if (sp == std::string_view::npos) break;
        line.remove_prefix(sp + 1);
    }
    return f;
}

}  // namespace

std::vector<Mount> parse_mountinfo(std::string_view text) {
    std::vector<Mount> out;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        const std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
        const std::vector<std::string_view> f = fields(line);
        const auto dash = std::find(f.begin(), f.end(), std::string_view("-"));
        if (f.size() < 7 || dash == f.end() || dash < f.begin() + 6 || f.end() - dash < 3) continue;
        Mount m;
        m.mount_point = unescape(f[4]);
        m.fstype = std::string(dash[1]);
        m.device = unescape(dash[2]);
        if (m.mount_point.empty() || m.mount_point[0] != '/') continue;
        if (m.fstype == "overlay" ? m.mount_point != "/" : pseudo_type(m.fstype)) continue;
        if (excluded_point(m.mount_point)) continue;
        const std::string_view options = f[5];
        m.readonly = options == "ro" || options.substr(0, 3) == "ro,";
        // A mount point mounted over: the newest hides the older one.
        out.erase(
            std::remove_if(out.begin(), out.end(), [&](const Mount& x) { return x.mount_point == m.mount_point; }),
            out.end());
        if (out.size() >= kMaxMounts) break;
        out.push_back(std::move(m));
    }
    std::sort(out.begin(), out.end(), [](const Mount& a, const Mount& b) { return a.mount_point < b.mount_point; });
    return out;
}

const Mount* mount_of(const std::vector<Mount>& mounts, std::string_view path) {
    const Mount* best = nullptr;
    for (const Mount& m : mounts)
        if ((m.mount_point == "/" || under(path, m.mount_point)) &&
            (!best || m.mount_point.size() > best->mount_point.size()))
            best = &m;
    return best;
}

}  // namespace baton::os
