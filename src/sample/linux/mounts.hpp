// The mounts whose space matters, from /proc/self/mountinfo (proc(5)): what node_exporter's
// filesystem collector reports by default. Pseudo filesystems (proc, sysfs, cgroup, devpts, ...),
// container image layers (overlay, squashfs) and the mounts under /dev, /proc, /sys and the
// container runtimes' storage are left out; tmpfs stays (a /dev/shm or a scratch tmpfs fills too),
// and so does an overlay mounted at "/" (baton in a container: the root its jobs write to).
// Pure, tested on recorded and hostile text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace baton::os {

struct Mount {
    std::string mount_point;  // octal escapes (\040 for a space) decoded
    std::string device;       // the mount source ("/dev/nvme0n1p2", "server:/export", "tmpfs")
    std::string fstype;       // "ext4", "xfs", "nfs4", "tmpfs", "fuse.sshfs"
    bool readonly = false;
};

// The real mounts of a mountinfo text, by mount point; a mount point mounted over (stacked) keeps
// the last, as path lookup sees it. At most 4096.
std::vector<Mount> parse_mountinfo(std::string_view text);

// The mount that holds `path` (an absolute path): the one with the longest mount point that is a
// prefix of it at a '/' boundary; null when none does.
const Mount* mount_of(const std::vector<Mount>& mounts, std::string_view path);

}  // namespace baton::os
