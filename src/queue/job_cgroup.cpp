#include "queue/job_cgroup.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/files.hpp"
#include "queue/job_shim.hpp"

namespace baton::queue {

namespace {

// A job cgroup's name is its job and attempt: a retry never meets the last attempt's leftovers.
std::string cgroup_name(std::int64_t id, int attempt) {
    return std::to_string(id) + "-" + std::to_string(attempt);
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

Status write_text(const std::string& path, const std::string& text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return make_error("cannot open " + path + ": " + std::strerror(errno));
    const ssize_t n = ::write(fd, text.data(), text.size());
    const int e = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(text.size())) return make_error("cannot write " + path + ": " + std::strerror(e));
    return Ok{};
}

Status make_dir(const std::string& path) {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
        return make_error("cannot create " + path + ": " + std::strerror(errno));
    return Ok{};
}

// Where cgroup2 is mounted, from mountinfo ("... MOUNT_POINT OPTIONS ... - cgroup2 SOURCE ...").
std::optional<std::string> cgroup2_mount(const std::string& mountinfo) {
    std::istringstream in(mountinfo);
    for (std::string line; std::getline(in, line);) {
        const std::size_t dash = line.find(" - ");
        if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
        std::istringstream f(line.substr(0, dash));
        std::string id, parent, dev, root, point;
        if (f >> id >> parent >> dev >> root >> point) return point;
    }
    return std::nullopt;
}

}  // namespace

std::string cpu_list(const std::vector<unsigned>& cpus) {
    std::string out;
    for (std::size_t i = 0; i < cpus.size();) {
        std::size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
        out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
        if (j > i) out += "-" + std::to_string(cpus[j]);
        i = j + 1;
    }
    return out;
}

Result<CgroupPlace> find_delegated_cgroup(const std::string& proc_root) {
    const std::optional<std::string> mounts = read_small_file(proc_root + "/self/mountinfo", 1u << 20);
    const std::optional<std::string> mount = mounts ? cgroup2_mount(*mounts) : std::nullopt;
    if (!mount) return make_error("no cgroup v2 hierarchy is mounted");
    std::string own;
    std::istringstream in(read_small_file(proc_root + "/self/cgroup", 1u << 16).value_or(""));
    for (std::string line; std::getline(in, line);)
        if (line.rfind("0::", 0) == 0) own = trimmed(line.substr(3));
    if (own.empty()) return make_error("this process has no cgroup v2 (the machine runs cgroup v1)");
    if (own == "/") return make_error("the agent runs in the root cgroup, not in one delegated to it");
    CgroupPlace p;
    p.dir = *mount + own;
    // Started again after a restart: systemd puts it back into D, a previous agent made D/agent.
    if (p.dir.size() > 6 && p.dir.compare(p.dir.size() - 6, 6, "/agent") == 0) p.dir.resize(p.dir.size() - 6);
    char mark[8] = {};
    const ssize_t got = ::getxattr(p.dir.c_str(), "trusted.delegate", mark, sizeof mark - 1);
    struct stat st {};
    const bool given_to_us = ::geteuid() != 0 && ::stat(p.dir.c_str(), &st) == 0 && st.st_uid == ::geteuid();
    if (!(got > 0 && mark[0] == '1') && !given_to_us)
        return make_error("the agent's cgroup " + own + " was not delegated to it (systemd: Delegate=yes, as in " +
                          "deploy/baton-queue.service)");
    std::istringstream offered(read_small_file(p.dir + "/cgroup.controllers", 4096).value_or(""));
    for (std::string c; offered >> c;)
        if (c == "memory" || c == "cpuset") p.controllers.push_back(c);
    if (p.controllers.empty())
        return make_error("the agent's cgroup " + own + " offers neither the memory nor the cpuset controller");
    return p;
}

std::string job_cgroup_dir(const CgroupPlace& place, const std::string& name) {
    return place.dir + "/jobs/" + name;
}

Status prepare_job_cgroups(const CgroupPlace& place) {
    for (const std::string& d : {place.dir + "/agent", place.dir + "/jobs"})
        if (Status s = make_dir(d); !s.ok()) return s;
    // Every process of D (the agent, its job starter) into D/agent: D may then hand controllers on.
    std::istringstream procs(read_small_file(place.dir + "/cgroup.procs", 1u << 20).value_or(""));
    for (std::string pid; procs >> pid;)
        if (Status s = write_text(place.dir + "/agent/cgroup.procs", pid); !s.ok() && errno != ESRCH) return s;
    std::string enable;
    for (const std::string& c : place.controllers) enable += (enable.empty() ? "+" : " +") + c;
    for (const std::string& d : {place.dir, place.dir + "/jobs"})
        if (Status s = write_text(d + "/cgroup.subtree_control", enable); !s.ok()) return s;
    return Ok{};
}

Result<std::string> create_job_cgroup(const CgroupPlace& place, const std::string& name, std::uint64_t memory_bytes,
                                      const std::vector<unsigned>& cpus) {
    const std::string dir = job_cgroup_dir(place, name);
    if (Status s = make_dir(dir); !s.ok()) return s.error();
    auto has = [&](const char* c) {
        for (const std::string& x : place.controllers)
            if (x == c) return true;
        return false;
    };
    if (has("memory")) {
        if (Status s = write_text(dir + "/memory.max", memory_bytes ? std::to_string(memory_bytes) : "max"); !s.ok())
            return s.error();
        (void)write_text(dir + "/memory.oom.group", "1");  // (Linux 4.19+)
    }
    if (has("cpuset") && !cpus.empty())
        if (Status s = write_text(dir + "/cpuset.cpus", cpu_list(cpus)); !s.ok()) return s.error();
    return dir;
}

bool remove_job_cgroup(const std::string& dir) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
    (void)write_text(dir + "/cgroup.kill", "1");
    return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

JobCgroups JobCgroups::open(bool enabled, const std::string& proc_root) {
    JobCgroups c;
    if (!enabled) {
        c.status_ = "CPU affinity only: job cgroups are off";
        return c;
    }
    Result<CgroupPlace> place = find_delegated_cgroup(proc_root);
    Status ready = place.ok() ? prepare_job_cgroups(*place) : Status(place.error());
    if (!ready.ok()) {
        c.status_ = "CPU affinity only: " + ready.error().message;
        return c;
    }
    std::string controllers;
    for (const std::string& name : place->controllers) controllers += (controllers.empty() ? "" : ", ") + name;
    c.status_ = "a cgroup per job under " + place->dir + "/jobs (" + controllers + ")";
    c.place_ = std::move(*place);
    return c;
}

Result<std::string> JobCgroups::create(std::int64_t id, int attempt, std::uint64_t memory_bytes,
                                       const std::vector<unsigned>& cpus) {
    if (!place_) return std::string();
    return create_job_cgroup(*place_, cgroup_name(id, attempt), memory_bytes, cpus);
}

void JobCgroups::drop(std::int64_t id, int attempt) {
    if (!place_) return;
    const std::string dir = job_cgroup_dir(*place_, cgroup_name(id, attempt));
    if (!remove_job_cgroup(dir)) stale_.push_back(dir);
}

void JobCgroups::sweep() {
    std::erase_if(stale_, [](const std::string& dir) { return remove_job_cgroup(dir); });
}

}  // namespace baton::queue
