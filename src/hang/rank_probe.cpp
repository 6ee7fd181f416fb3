#include "hang/rank_probe.hpp"

#include <dirent.h>
#include <map>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/text_parse.hpp"
#include "hang/stack_request.hpp"
#include "sample/linux/proc_pid_stat.hpp"

namespace baton::hang {

namespace {

struct Proc {
    pid_t ppid = 0;
    char state = '?';
    std::uint64_t ticks = 0;  // utime + stime
};

// Every process's parent, state and CPU ticks, from one pass over /proc.
std::map<pid_t, Proc> read_processes(const std::string& proc_root) {
    std::map<pid_t, Proc> out;
    DIR* d = opendir(proc_root.c_str());
    if (!d) return out;
    while (const dirent* e = readdir(d)) {
        const std::optional<pid_t> pid = text::parse_digits<pid_t>(e->d_name);
        if (!pid) continue;
        const std::optional<std::string> text = read_small_file(proc_root + "/" + std::to_string(*pid) + "/stat", 4096);
        os::PidStat st;
        if (!text || !os::parse_pid_stat(*text, st)) continue;
        out[*pid] = {static_cast<pid_t>(st.ppid), st.state, st.utime + st.stime};
    }
    closedir(d);
    return out;
}

// The CPU ticks of `root` and every process below it.
std::uint64_t tree_ticks(const std::map<pid_t, Proc>& procs, const std::multimap<pid_t, pid_t>& children, pid_t root) {
    std::uint64_t sum = 0;
    std::vector<pid_t> todo{root};
    for (std::size_t i = 0; i < todo.size() && i < 100000; ++i) {
        if (auto it = procs.find(todo[i]); it != procs.end()) sum += it->second.ticks;
        for (auto [c, end] = children.equal_range(todo[i]); c != end; ++c) todo.push_back(c->second);
    }
    return sum;
}

}  // namespace

Look look_at_ranks(const std::vector<ProbedRank>& ranks, bool stacks, double at, double timeout_seconds,
                   const std::string& proc_root) {
    Look look;
    look.at = at;
    look.unix_ms = unix_millis();
    const std::map<pid_t, Proc> procs = read_processes(proc_root);
    std::multimap<pid_t, pid_t> children;
    for (const auto& [pid, p] : procs) children.emplace(p.ppid, pid);
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    std::vector<StackTarget> targets;
    std::vector<std::size_t> target_of;  // look.ranks index of each target
    for (const ProbedRank& r : ranks) {
        RankLook l;
        l.rank = r.rank;
        l.pid = r.pid;
        l.alive = r.alive;
        l.exit_status = r.exit_status;
        l.exited_unix_ms = r.exited_unix_ms;
        if (auto it = procs.find(r.pid); r.alive && it != procs.end()) {
            l.state = it->second.state;
            l.cpu_seconds = static_cast<double>(tree_ticks(procs, children, r.pid)) / tick;
            const std::string w = file_value(proc_root + "/" + std::to_string(r.pid) + "/wchan");
            if (w != "0") l.wchan = w;
        }
        if (stacks && r.alive) {
            if (Result<StackTarget> t = find_stack_target(r.pid, proc_root); t.ok()) {
                targets.push_back(std::move(*t));
                target_of.push_back(look.ranks.size());
            } else {
                l.no_stacks = t.error().message;
            }
        }
        look.ranks.push_back(std::move(l));
    }
    if (!targets.empty()) {
        const std::vector<StackReply> replies = request_stacks(targets, timeout_seconds, proc_root);
        for (std::size_t i = 0; i < replies.size(); ++i) {
            RankLook& l = look.ranks[target_of[i]];
            if (const PyThreadStack* m = main_thread(replies[i].threads)) {
                l.has_stacks = true;
                l.frames = m->frames;
            } else {
                l.no_stacks = replies[i].error;
            }
        }
    }
    return look;
}

}  // namespace baton::hang
