#include "sample/linux/cgroup_owner.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "core/text_parse.hpp"

namespace baton::os {

namespace {

// Longer paths are not a layout any scheduler writes; a cap keeps a hostile file cheap.
constexpr std::size_t kMaxPath = 4096;
constexpr std::size_t kMaxComponents = 64;

bool all_of_chars(std::string_view s, bool (*ok)(char)) {
    return std::all_of(s.begin(), s.end(), ok);
}

bool digit(char c) {
    return c >= '0' && c <= '9';
}

bool hex(char c) {
    return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool step_char(char c) {
    return digit(c) || (c >= 'a' && c <= 'z') || c == '_';
}

bool uid_char(char c) {
    return hex(c) || c == '-' || c == '_';
}

// What systemd allows in a unit name (and LXC in a container's), never a byte a label must escape.
bool unit_char(char c) {
    return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == ':' || c == '_' || c == '.' ||
           c == '@' || c == '-' || c == '\\';
}

bool job_id(std::string_view s) {
    return !s.empty() && s.size() <= 20 && all_of_chars(s, digit);
}

// Container ids are 64 hex digits (Docker, containerd, CRI-O, Podman); 12 is the short form.
bool container_id(std::string_view s) {
    return s.size() >= 12 && s.size() <= 64 && all_of_chars(s, hex);
}

bool unit_name(std::string_view s) {
    return !s.empty() && s.size() <= 255 && all_of_chars(s, unit_char);
}

bool starts(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

bool ends(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::vector<std::string_view> components(std::string_view path) {
    std::vector<std::string_view> out;
    while (!path.empty() && out.size() <= kMaxComponents) {
        const std::size_t slash = path.find('/');
        std::string_view c = path.substr(0, slash);
        if (!c.empty()) out.push_back(c);
        if (slash == std::string_view::npos) break;
        path.remove_prefix(slash + 1);
    }
    return out;
}

bool slurm_root(std::string_view c) {  // v1's top directory
    return c == "slurm" || starts(c, "slurm_") || ends(c, "slurmstepd.scope");
}

// Slurm's root where only root can make cgroups: the top of a hierarchy (v1) or system.slice
// (v2), so a user's delegated subtree (user@UID.service/...) cannot pose as a Slurm job. The index of
// the component after it, or 0 for none.
std::size_t slurm_root_end(const std::vector<std::string_view>& c) {
    if (!c.empty() && slurm_root(c[0])) return 1;
    if (c.size() > 1 && c[0] == "system.slice" && ends(c[1], "slurmstepd.scope")) return 2;
    return 0;
}

JobRef slurm_job(const std::vector<std::string_view>& c) {
    JobRef r;
    const std::size_t from = slurm_root_end(c);
    for (std::size_t i = from; from > 0 && i < c.size(); ++i) {
        if (!starts(c[i], "job_") || !job_id(c[i].substr(4))) continue;
        r.kind = JobKind::slurm;
        r.id = c[i].substr(4);
        if (i + 1 < c.size() && starts(c[i + 1], "step_")) {
            const std::string_view step = c[i + 1].substr(5);
            if (!step.empty() && step.size() <= 32 && all_of_chars(step, step_char)) r.step = step;
        }
        return r;
    }
    return r;
}

// A container's scope or directory name: its runtime and id, or false.
struct RuntimePrefix {
    std::string_view prefix, runtime;
};
constexpr std::array<RuntimePrefix, 4> kScopePrefixes{
    {{"cri-containerd-", "containerd"}, {"crio-", "cri-o"}, {"docker-", "docker"}, {"libpod-", "podman"}}};

bool container_scope(std::string_view c, JobRef& r) {
    if (!ends(c, ".scope")) return false;
    c.remove_suffix(6);
    for (const RuntimePrefix& p : kScopePrefixes) {
        if (!starts(c, p.prefix)) continue;
        const std::string_view id = c.substr(p.prefix.size());
        // conmon, the runtime's monitor, has a scope of its own beside the container's: not it.
        if (!container_id(id)) return false;
        r.container_id = id;
        r.runtime = p.runtime;
        return true;
    }
    return false;
}

JobRef pod(const std::vector<std::string_view>& c) {
    JobRef r;
    // The kubelet's root at the top (or under kind's kubelet.slice), where users cannot make cgroups.
    std::size_t i = 0;
    if (!c.empty() && c[0] == "kubelet.slice") i = 1;
    if (i >= c.size() || c[i].find("kubepods") == std::string_view::npos) return r;
    for (; i < c.size(); ++i) {
        std::string_view uid;
        if (starts(c[i], "pod")) {
            uid = c[i].substr(3);  // cgroupfs: pod<UID>
        } else if (ends(c[i], ".slice")) {
            const std::size_t at = c[i].rfind("-pod");  // systemd: kubepods-<qos>-pod<UID_>.slice
            if (at == std::string_view::npos) continue;
            uid = c[i].substr(at + 4, c[i].size() - 6 - (at + 4));
        } else {
            continue;
        }
        if (uid.size() < 8 || uid.size() > 64 || !all_of_chars(uid, uid_char)) return r;
        r.kind = JobKind::pod;
        r.id = uid;
        std::replace(r.id.begin(), r.id.end(), '_', '-');
        if (i + 1 < c.size() && !container_scope(c[i + 1], r) && container_id(c[i + 1])) r.container_id = c[i + 1];
        return r;
    }
    return r;
}

JobRef container(const std::vector<std::string_view>& c) {
    JobRef r;
    for (std::size_t i = 0; i < c.size(); ++i) {
        const bool next_hex = i + 1 < c.size() && container_id(c[i + 1]);
        if (container_scope(c[i], r)) {
        } else if (c[i] == "docker" && next_hex) {
            r.container_id = c[i + 1];
            r.runtime = "docker";
        } else if (c[i] == "libpod_parent" && i + 1 < c.size() && starts(c[i + 1], "libpod-") &&
                   container_id(c[i + 1].substr(7))) {
            r.container_id = c[i + 1].substr(7);
            r.runtime = "podman";
        } else if (starts(c[i], "lxc.payload.") && c[i].size() > 12 && c[i].size() <= 76 &&
                   unit_name(c[i].substr(12))) {
            r.container_id = c[i].substr(12);
            r.runtime = "lxc";
        } else {
            continue;
        }
        r.kind = JobKind::container;
        r.id = r.container_id;
        return r;
    }
    return r;
}

// systemd's slices: a service or transient scope outside user.slice, or a user's slice.
JobRef systemd_unit(const std::vector<std::string_view>& c) {
    JobRef r;
    if (c.empty()) return r;
    if (c[0] == "user.slice") {
        if (c.size() >= 2 && starts(c[1], "user-") && ends(c[1], ".slice")) {
            const std::string_view uid = c[1].substr(5, c[1].size() - 11);
            if (job_id(uid)) {
                r.kind = JobKind::user;
                r.id = uid;
            }
        }
        return r;
    }
    std::size_t i = 0;
    while (i < c.size() && ends(c[i], ".slice")) ++i;
    if (i == 0 || i >= c.size() || !(ends(c[i], ".service") || ends(c[i], ".scope")) || !unit_name(c[i])) return r;
    // A container runtime's own scope that is no container (conmon's libpod-conmon-ID.scope, cri-o's
    // crio-conmon-ID.scope) is the runtime's plumbing: no job, not a service.
    for (const RuntimePrefix& p : kScopePrefixes)
        if (ends(c[i], ".scope") && starts(c[i], p.prefix)) return r;
    r.kind = JobKind::service;
    r.id = c[i];
    return r;
}

// How much a path says of its owner: a scheduler's job, pod or container above a unit or user.
int rank(const JobRef& r) {
    switch (r.kind) {
        case JobKind::slurm:
        case JobKind::pod:
        case JobKind::container:
            return 2;
        case JobKind::service:
        case JobKind::user:
            return 1;
        case JobKind::none:
            break;
    }
    return 0;
}

}  // namespace

JobRef classify_cgroup(std::string_view path) {
    if (path.size() > kMaxPath) return {};
    std::vector<std::string_view> c = components(path);
    if (c.size() > kMaxComponents) return {};
    // Read from inside a private cgroup namespace (an agent's pod under containerd on cgroup v2),
    // another process's path climbs out of the namespace first: "/../../../kubepods-besteffort.slice/
    // kubepods-besteffort-pod<UID>.slice/cri-containerd-<ID>.scope". What follows the climb is the path
    // from the common ancestor down, which names the job as well (the kubelet's, Slurm's, systemd's
    // top directories are only ever climbed out of, never into).
    std::size_t climbed = 0;
    while (climbed < c.size() && c[climbed] == "..") ++climbed;
    c.erase(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(climbed));
    // Under the cgroupfs driver the common ancestor of two pods is kubepods/ itself, so the climb ends
    // below it ("/../../besteffort/pod<UID>/<ID>"): it is put back. A user's own subtree is never
    // below kubepods/, so nothing a user makes can be read this way.
    if (climbed > 0 && !c.empty() && (c[0] == "besteffort" || c[0] == "burstable" || starts(c[0], "pod")))
        c.insert(c.begin(), std::string_view("kubepods"));
    for (JobRef (*f)(const std::vector<std::string_view>&) : {slurm_job, pod, container, systemd_unit}) {
        JobRef r = f(c);
        if (r.kind != JobKind::none) return r;
    }
    return {};
}

CgroupReading read_cgroup_file(std::string_view text) {
    CgroupReading best, unified, first;
    bool have_unified = false, have_first = false;
    int best_rank = 0;
    bool best_unified = false;
    while (!text.empty()) {
        std::string_view line = text::take_line(text);
        // hierarchy-id:controllers:path
        const std::size_t a = line.find(':');
        const std::size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
        if (b == std::string_view::npos) continue;
        const std::string_view path = line.substr(b + 1);
        const bool is_unified = line.substr(0, b + 1) == "0::";
        JobRef job = classify_cgroup(path);
        const int r = rank(job);
        // The richest owner wins; between equals, the unified hierarchy, then the first line.
        if (r > best_rank || (r == best_rank && r > 0 && is_unified && !best_unified)) {
            best = {std::string(path), job};
            best_rank = r;
            best_unified = is_unified;
        }
        if (is_unified && !have_unified) {
            unified = {std::string(path), std::move(job)};
            have_unified = true;
        } else if (!is_unified && !have_first) {
            first = {std::string(path), std::move(job)};
            have_first = true;
        }
    }
    if (best_rank > 0) return best;
    return have_unified ? unified : first;
}

}  // namespace baton::os
