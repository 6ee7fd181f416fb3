#include "sample/linux/tree_end.hpp"

#include <algorithm>
#include <cstdio>
#include <dirent.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "sample/linux/kept_file.hpp"
#include "sample/linux/pid_signal.hpp"
#include "sample/linux/proc_pid_stat.hpp"

namespace baton::os {

namespace {

// The pids listed in a /proc children file.
void read_children(const std::string& path, std::vector<pid_t>& out) {
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return;
    long p = 0;
    while (std::fscanf(f, "%ld", &p) == 1) out.push_back(static_cast<pid_t>(p));
    std::fclose(f);
}

// The children of `pid`, from every thread's list (a thread's children are its own).
std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> out;
    const std::string task = "/proc/" + std::to_string(pid) + "/task";
    DIR* d = ::opendir(task.c_str());
    if (!d) return out;
    while (const dirent* e = ::readdir(d))
        if (e->d_name[0] != '.') read_children(task + "/" + e->d_name + "/children", out);
    ::closedir(d);
    return out;
}

}  // namespace

std::vector<pid_t> own_children() {
    std::vector<pid_t> out;
    const std::string me = std::to_string(::getpid());
    read_children("/proc/" + me + "/task/" + me + "/children", out);
    return out;
}

TreeMember describe_process(pid_t pid) {
    TreeMember m;
    m.pid = pid;
    ReadBuffer buf;
    PidStat st;
    if (read_file("/proc/" + std::to_string(pid) + "/stat", buf) && parse_pid_stat(buf.view(), st)) {
        m.start_ticks = st.starttime;
        m.state = st.state;
        m.name = std::string(st.comm);
    }
    return m;
}

std::vector<TreeMember> descendants(pid_t root) {
    std::vector<pid_t> pids = children_of(root);
    for (std::size_t i = 0; i < pids.size() && pids.size() < 100000; ++i)
        for (pid_t c : children_of(pids[i])) pids.push_back(c);
    std::vector<TreeMember> out;
    out.reserve(pids.size());
    for (pid_t p : pids)
        if (TreeMember m = describe_process(p); m.start_ticks != 0) out.push_back(std::move(m));
    return out;
}

int signal_tree(pid_t root, pid_t group, int sig) {
    const std::vector<TreeMember> members = descendants(root);
    int reached = group > 0 && ::kill(-group, sig) == 0 ? 1 : 0;
    for (const TreeMember& m : members)
        if (signal_process(m.pid, m.start_ticks, sig) == 0) ++reached;
    return reached;
}

void become_subreaper() {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

TreeEnd::TreeEnd(Tree tree, double last_wait_seconds) : tree_(std::move(tree)), last_wait_(last_wait_seconds) {}

void TreeEnd::begin(double now, double grace_seconds, int sig) {
    if (phase_ == Phase::gone || phase_ == Phase::stuck) return;
    tree_.signal(sig);
    if (phase_ == Phase::running) {
        phase_ = Phase::grace;
        deadline_ = now + grace_seconds;
    } else if (phase_ == Phase::grace) {
        deadline_ = std::min(deadline_, now + grace_seconds);
    }
}

TreeEnd::Phase TreeEnd::step(double now) {
    if (phase_ != Phase::grace && phase_ != Phase::killed) return phase_;
    if (!tree_.alive()) {
        phase_ = Phase::gone;
        deadline_ = std::numeric_limits<double>::infinity();
    } else if (now >= deadline_ && phase_ == Phase::grace) {
        killed_ = tree_.signal(SIGKILL);
        phase_ = Phase::killed;
        deadline_ = now + last_wait_;
    } else if (now >= deadline_) {
        phase_ = Phase::stuck;
        deadline_ = std::numeric_limits<double>::infinity();
    }
    return phase_;
}

TreeEnd::Phase TreeEnd::end(double grace_seconds, int sig) {
    if (phase_ == Phase::running && !tree_.alive()) return phase_ = Phase::gone;
    begin(monotonic_seconds(), grace_seconds, sig);
    for (;;) {
        if (const Phase p = step(monotonic_seconds()); p != Phase::grace && p != Phase::killed) return p;
        sleep_seconds(0.01);
    }
}

}  // namespace baton::os
