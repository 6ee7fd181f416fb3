#include "hang/hang_verdict.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "hang/frame_roles.hpp"
#include "hang/stacks_view.hpp"

namespace baton::hang {

namespace {

// Below this (cores) a rank whose stack did not move is waiting, not working.
constexpr double kIdleCores = 0.2;

std::string clock_hms(std::int64_t unix_ms) {
    return local_time_text(unix_ms, "%H:%M:%S");
}

RankVerdict classify(const RankLook& b, const RankLook& a, double interval, std::int64_t before_unix_ms) {
    RankVerdict v;
    v.rank = a.rank;
    v.pid = a.pid;
    v.state = a.state;
    v.wchan = a.wchan;
    v.no_stacks = a.no_stacks;
    v.exit_status = a.exit_status;
    v.exited_unix_ms = a.exited_unix_ms;
    v.cpu_cores = interval > 0 ? std::max(0.0, a.cpu_seconds - b.cpu_seconds) / interval : 0;
    v.frames = a.has_stacks ? a.frames : b.frames;
    v.collective = collective_of(v.frames);
    if (const PyFrame* f = user_frame(v.frames)) v.where = *f;
    if (!a.alive) {
        v.condition = RankCondition::exited;
    } else if (a.state == 'T' || a.state == 't') {
        v.condition = RankCondition::stopped;
    } else if (a.state == 'D' && b.state == 'D') {
        v.condition = RankCondition::in_kernel;
    } else if (!a.has_stacks || !b.has_stacks) {
        // One look is no proof that it stays there (it may have just arrived): judged at the next.
        v.condition = RankCondition::silent;
        if (v.no_stacks.empty()) v.no_stacks = "its stacks came at one look of two";
    } else if (a.frames == b.frames) {
        // The same place: waiting or working there, as its CPU says.
        if (!v.collective.empty())
            v.condition = RankCondition::waiting_in_collective;  // NCCL spins a core while it waits
        else
            v.condition = v.cpu_cores < kIdleCores ? RankCondition::blocked : RankCondition::busy_in_place;
    } else {
        const std::string was = collective_of(b.frames);
        const PyFrame* then = user_frame(b.frames);
        // A wait that polls in Python (monitored_barrier) moves its innermost frames, not its place.
        const bool same_wait = !v.collective.empty() && was == v.collective && then && v.where && *then == *v.where;
        v.condition = same_wait ? RankCondition::waiting_in_collective : RankCondition::running;
    }
    // NCCL's collectives are asynchronous: the rank waits where it next synchronises, the Flight
    // Recorder says on which collective. One pending since before the first look did not complete
    // in the whole interval.
    const bool stays = v.condition == RankCondition::blocked || v.condition == RankCondition::busy_in_place ||
                       v.condition == RankCondition::silent;
    if (stays && a.alive && a.fr_pending && a.fr_pending->created_unix_ms <= before_unix_ms) {
        v.condition = RankCondition::waiting_in_collective;
        v.collective = a.fr_pending->op.empty() ? "a collective" : a.fr_pending->op;
        if (const PyFrame* f = user_frame(a.fr_pending->frames)) v.where = *f;
    }
    return v;
}

// A live rank that waits. Exited or silent ranks alone make no hang (the others may finish, as rank 0
// saving a checkpoint after the rest left); they are named when others wait.
bool waits(RankCondition c) {
    return c == RankCondition::waiting_in_collective || c == RankCondition::blocked || c == RankCondition::in_kernel ||
           c == RankCondition::stopped;
}

std::string where_text(const RankVerdict& v) {
    return v.where ? place_text(*v.where) : std::string("no Python frame");
}

// What one rank (or group: `n` of them) does, after its "rank N " / "ranks N, M ".
std::string doing_text(const RankVerdict& v, std::size_t n) {
    const bool one = n == 1;
    switch (v.condition) {
        case RankCondition::waiting_in_collective:
            return std::string(one ? "waits" : "wait") + " in " + v.collective + " at " +
                   (v.where ? v.where->file + ":" + (v.where->line ? std::to_string(*v.where->line) : "?") : "?");
        case RankCondition::blocked:
            return std::string(one ? "is" : "are") + " blocked in " + where_text(v) +
                   " with no CPU (a lock, a pipe, input or a queue)";
        case RankCondition::running:
            return std::string(one ? "is" : "are") + " in " + where_text(v) +
                   fmt::format(", running ({:.0f} % of a core)", v.cpu_cores * 100);
        case RankCondition::busy_in_place:
            return std::string(one ? "is" : "are") + " in " + where_text(v) +
                   fmt::format(", busy in one place ({:.0f} % of a core: a loop on one line or a long call)",
                               v.cpu_cores * 100);
        case RankCondition::in_kernel:
            return std::string(one ? "is" : "are") + " stuck in the kernel (state D" +
                   (v.wchan.empty() ? "" : ", in " + v.wchan) + "): I/O, NFS or a driver";
        case RankCondition::stopped:
            return std::string(one ? "is" : "are") + " stopped (state T: a SIGSTOP, Ctrl-Z or a debugger)";
        case RankCondition::exited:
            return "exited" + fmt::format(" (status {})", v.exit_status) +
                   (v.exited_unix_ms ? " at " + clock_hms(v.exited_unix_ms) : "");
        case RankCondition::silent:
            return std::string(one ? "gives" : "give") + " no stacks (" + v.no_stacks + ")";
    }
    return "";
}

// The ranks in groups that do the same thing at the same place, the largest first.
struct Group {
    std::vector<int> ranks;
    const RankVerdict* first = nullptr;
};
std::vector<Group> group_by_doing(const std::vector<const RankVerdict*>& vs) {
    std::map<std::string, Group> by;
    std::vector<std::string> order;
    for (const RankVerdict* v : vs) {
        const std::string k = std::string(condition_name(v->condition)) + "|" + v->collective + "|" +
                              (v->where ? v->where->file + ":" + std::to_string(v->where->line.value_or(0)) : "");
        auto [it, fresh] = by.try_emplace(k);
        if (fresh) {
            it->second.first = v;
            order.push_back(k);
        }
        it->second.ranks.push_back(v->rank);
    }
    std::vector<Group> out;
    for (const std::string& k : order) out.push_back(by[k]);
    std::stable_sort(out.begin(), out.end(),
                     [](const Group& x, const Group& y) { return x.ranks.size() > y.ranks.size(); });
    return out;
}

// What the culprits' condition means for the ranks that wait.
std::string meaning(const Group& g) {
    const std::string who = ranks_text(g.ranks);
    switch (g.first->condition) {
        case RankCondition::exited:
            return who +
                   " ended while the others wait for it (uneven data: it ran out of batches first; or an "
                   "exception it caught)";
        case RankCondition::running:
        case RankCondition::busy_in_place:
            return who + " does not reach the collective (one under `if rank == ...`, or work only it does)";
        case RankCondition::blocked:
            return who + " waits on something else (a lock, a pipe, input)";
        case RankCondition::in_kernel:
            return who + " is stuck in a system call";
        case RankCondition::stopped:
            return who + " was stopped";
        case RankCondition::silent:
        case RankCondition::waiting_in_collective:
            break;
    }
    return who + " holds them up";
}

}  // namespace

const char* condition_name(RankCondition c) {
    switch (c) {
        case RankCondition::waiting_in_collective:
            return "waiting_in_collective";
        case RankCondition::blocked:
            return "blocked";
        case RankCondition::running:
            return "running";
        case RankCondition::busy_in_place:
            return "busy_in_place";
        case RankCondition::in_kernel:
            return "in_kernel";
        case RankCondition::stopped:
            return "stopped";
        case RankCondition::exited:
            return "exited";
        case RankCondition::silent:
            return "silent";
    }
    return "silent";
}

std::optional<HangVerdict> judge_hang(const Look& before, const Look& after, std::int64_t since_unix_ms,
                                      bool multi_node, bool since_first_look) {
    HangVerdict v;
    const double interval = after.at - before.at;
    for (const RankLook& a : after.ranks) {
        auto b = std::find_if(before.ranks.begin(), before.ranks.end(),
                              [&](const RankLook& x) { return x.rank == a.rank && x.pid == a.pid; });
        if (b != before.ranks.end()) {
            v.ranks.push_back(classify(*b, a, interval, before.unix_ms));
            continue;
        }
        // A rank (or a pid) the first look did not have: started since, nothing to compare with.
        RankLook none = a;
        none.has_stacks = false;
        none.state = '?';
        v.ranks.push_back(classify(none, a, 0, before.unix_ms));
    }
    std::sort(v.ranks.begin(), v.ranks.end(),
              [](const RankVerdict& x, const RankVerdict& y) { return x.rank < y.rank; });
    std::vector<const RankVerdict*> in_collective, others;
    bool anyone_waits = false;
    for (const RankVerdict& r : v.ranks) {
        anyone_waits = anyone_waits || waits(r.condition);
        (r.condition == RankCondition::waiting_in_collective ? in_collective : others).push_back(&r);
    }
    if (!anyone_waits) return std::nullopt;  // every rank works: an evaluation, a checkpoint, a compile
    const std::vector<Group> waiting = group_by_doing(in_collective), rest = group_by_doing(others);
    const std::string since = since_first_look
                                  ? " since at least " + clock_hms(since_unix_ms) + " (the first look at its stacks)"
                                  : " since " + clock_hms(since_unix_ms);
    v.since_unix_ms = since_unix_ms;
    v.rule = waiting.size() > 1 ? "rank_desync" : "rank_hang";
    if (waiting.size() > 1) {
        // The ranks wait in different collectives: the largest group is the reference, the others
        // skipped one or called another.
        std::string minority, named;
        std::vector<int> odd;
        for (std::size_t i = 1; i < waiting.size(); ++i) {
            minority += ranks_text(waiting[i].ranks) + " " + doing_text(*waiting[i].first, waiting[i].ranks.size()) +
                        (waiting[i].first->where ? " (" + waiting[i].first->where->function + ")" : "") + "; ";
            odd.insert(odd.end(), waiting[i].ranks.begin(), waiting[i].ranks.end());
        }
        for (const Group& g : rest) minority += ranks_text(g.ranks) + " " + doing_text(*g.first, g.ranks.size()) + "; ";
        std::sort(odd.begin(), odd.end());
        v.summary = minority + ranks_text(waiting[0].ranks) + " " +
                    doing_text(*waiting[0].first, waiting[0].ranks.size()) +
                    (waiting[0].first->where ? " (" + waiting[0].first->where->function + ")" : "") + since + ": " +
                    ranks_text(odd) +
                    (odd.size() == 1 ? " skipped a collective or called another one"
                                     : " skipped a collective or called other ones");
    } else if (!waiting.empty()) {
        std::string culprits;
        for (const Group& g : rest) culprits += ranks_text(g.ranks) + " " + doing_text(*g.first, g.ranks.size()) + "; ";
        const bool everyone = rest.empty();
        v.summary = culprits +
                    (everyone ? std::string(v.ranks.size() == 1 ? "the rank " : "every rank ")
                              : ranks_text(waiting[0].ranks) + " ") +
                    doing_text(*waiting[0].first, everyone ? 1 : waiting[0].ranks.size()) + since + ": ";
        if (!everyone)
            v.summary += meaning(rest[0]);
        else if (multi_node)
            v.summary +=
                "the rank they wait for is on another node (its launcher names it), or the network between "
                "the nodes is down";
        else
            v.summary +=
                "no rank here is missing from it; the collective itself does not complete (the network "
                "or NCCL: --nccl-debug)";
    } else {
        // Nobody in a collective: ranks blocked, stuck or gone, and maybe some that run.
        std::string parts;
        for (const Group& g : rest)
            parts += (parts.empty() ? "" : "; ") + ranks_text(g.ranks) + " " + doing_text(*g.first, g.ranks.size());
        v.summary = parts + since + ": no rank completes a step";
    }
    if (after.flight_recorder) {
        const FrVerdict& fr = *after.flight_recorder;
        v.flight_recorder = fr.summary;
        v.summary += ". " + fr.summary;
        if (fr.desync) v.rule = "rank_desync";
        v.key += "fr:" + std::string(fr.desync ? "desync" : "pending") + ":" + fr.pg + ":" + std::to_string(fr.seq) +
                 ":" + fr.op + ":";
        for (int r : fr.culprits) v.key += std::to_string(r) + ",";
        v.key += ";";
    } else if (!after.flight_recorder_none.empty()) {
        v.flight_recorder = "stacks only: " + after.flight_recorder_none;
    }
    // A running rank's place moves all the time: its condition is what counts.
    for (const RankVerdict& r : v.ranks)
        v.key += std::to_string(r.rank) + ":" + condition_name(r.condition) +
                 (r.condition == RankCondition::running
                      ? std::string()
                      : ":" + r.collective + ":" +
                            (r.where ? r.where->file + ":" + std::to_string(r.where->line.value_or(0)) : "")) +
                 ";";
    return v;
}

diagnose::Finding hang_finding(const HangVerdict& v, double hang_seconds) {
    diagnose::Finding f;
    f.rule = v.rule;
    f.severity = diagnose::Severity::critical;
    f.subject = "job";
    f.summary = v.summary;
    for (const RankVerdict& r : v.ranks) {
        diagnose::Evidence e;
        e.metric = "rank" + std::to_string(r.rank) + ".cpu_percent";
        e.average = r.cpu_cores * 100;
        e.samples = 2;
        f.evidence.push_back(e);
    }
    diagnose::Evidence quiet;
    quiet.metric = "hang.seconds_without_progress";
    quiet.threshold = fmt::format(">= {:.0f}", hang_seconds);
    quiet.samples = 2;
    f.evidence.push_back(quiet);
    f.recommendation =
        v.rule == "rank_desync"
            ? "every rank must call the same collectives in the same order with the same sizes: look for a "
              "collective under `if rank == ...`, a loop whose length differs between ranks (uneven data: "
              "DistributedSampler(drop_last=True) or join()), or an exception caught on one rank"
            : "the usual causes: a collective under `if rank == ...`, uneven data so one rank runs out of batches "
              "first (DistributedSampler(drop_last=True), or DDP's join()), an exception caught on one rank, a rank "
              "waiting on a lock or input; the stacks show where each rank is";
    f.snippet = "baton stacks --pid " + std::to_string(v.ranks.empty() ? 0 : v.ranks.front().pid) + " --threads";
    f.doc = "docs/findings.md#" + v.rule;
    return f;
}

std::string hang_text(const HangVerdict& v, const std::string& who) {
    std::string out = who + ": " + v.rule + ": " + printable(v.summary) + "\n";
    if (v.flight_recorder.rfind("stacks only", 0) == 0) out += "  " + printable(v.flight_recorder) + "\n";
    std::vector<RankStack> stacks;
    for (const RankVerdict& r : v.ranks)
        if (!r.frames.empty()) stacks.push_back({r.rank, r.frames});
    const std::vector<StackGroup> groups = group_stacks(stacks);
    for (const StackGroup& g : groups) {
        out += "  " + ranks_text(g.ranks) + " (most recent call last):\n";
        out += traceback_lines(g.frames, groups.size() > 1 ? g.shared_outer : g.frames.size(), "    ");
    }
    out += "  see: baton explain " + v.rule + "\n";
    return out;
}

}  // namespace baton::hang
