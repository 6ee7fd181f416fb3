#include "hang/stacks_view.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/json_writer.hpp"
#include "core/printable.hpp"

namespace baton::hang {

namespace {

// "ranks 0, 1, 3", "rank 2", "pids 10, 11 (python3)", or the labels one by one when they mix.
std::string members_label(const std::vector<StackReply>& replies, const std::vector<std::size_t>& members) {
    bool all_ranks = true;
    for (std::size_t i : members) all_ranks = all_ranks && replies[i].target.rank.has_value();
    std::string out;
    if (all_ranks) {
        for (std::size_t i : members) out += (out.empty() ? "" : ", ") + std::to_string(*replies[i].target.rank);
        return (members.size() == 1 ? "rank " : "ranks ") + out;
    }
    for (std::size_t i : members) out += (out.empty() ? "" : ", ") + process_label(replies[i].target);
    return out;
}

std::string frame_line(const PyFrame& f) {
    return fmt::format("File \"{}\", line {}, in {}", printable(f.file), f.line ? std::to_string(*f.line) : "???",
                       printable(f.function));
}

void write_frames_json(JsonWriter& w, const std::vector<PyFrame>& frames) {
    w.key("frames");
    w.begin_array();
    for (const PyFrame& f : frames) {
        w.begin_object();
        w.field("file", f.file);
        w.key("line");
        if (f.line)
            w.value(*f.line);
        else
            w.null();
        w.field("function", f.function);
        w.end_object();
    }
    w.end_array();
}

}  // namespace

std::string traceback_lines(const std::vector<PyFrame>& frames, std::size_t marked_from_outer,
                            std::string_view indent) {
    std::string out;
    if (frames.empty()) out += std::string(indent) + "  (no Python frame)\n";
    for (std::size_t depth = 0; depth < frames.size(); ++depth) {
        const PyFrame& f = frames[frames.size() - 1 - depth];
        out += std::string(indent) + (depth >= marked_from_outer ? "> " : "  ") + frame_line(f) + "\n";
    }
    return out;
}

std::string process_label(const StackTarget& t) {
    if (t.rank) return "rank " + std::to_string(*t.rank);
    return "pid " + std::to_string(t.pid) + " (" + printable(t.name) + ")";
}

std::vector<ReplyGroup> group_replies(const std::vector<StackReply>& replies) {
    std::vector<RankStack> stacks;
    for (std::size_t i = 0; i < replies.size(); ++i)
        if (const PyThreadStack* m = main_thread(replies[i].threads))
            stacks.push_back({static_cast<int>(i), m->frames});
    std::vector<ReplyGroup> out;
    for (StackGroup& g : group_stacks(stacks)) {
        ReplyGroup r;
        for (int i : g.ranks) r.members.push_back(static_cast<std::size_t>(i));
        r.frames = std::move(g.frames);
        r.shared_outer = g.shared_outer;
        out.push_back(std::move(r));
    }
    return out;
}

std::string stacks_text(const std::vector<StackReply>& replies, bool threads) {
    std::string out;
    std::size_t answered = 0, more_threads = 0;
    double slowest = 0;
    for (const StackReply& r : replies) {
        if (r.threads.empty()) continue;
        ++answered;
        slowest = std::max(slowest, r.seconds);
        if (r.threads.size() > 1) ++more_threads;
    }
    out += fmt::format("{} of {} process{} answered (the slowest in {:.0f} ms)\n", answered, replies.size(),
                       replies.size() == 1 ? "" : "es", slowest * 1000);
    const std::vector<ReplyGroup> groups = group_replies(replies);
    for (const ReplyGroup& g : groups) {
        out += "\n" + members_label(replies, g.members) + ": main thread (most recent call last)";
        for (std::size_t i : g.members)
            if (replies[i].partial) out += " [" + process_label(replies[i].target) + ": partial dump]";
        out += "\n";
        out += traceback_lines(g.frames, groups.size() > 1 ? g.shared_outer : g.frames.size());
    }
    for (const StackReply& r : replies)
        if (r.threads.empty())
            out += "\n" + process_label(r.target) + " (pid " + std::to_string(r.target.pid) +
                   "): no stacks: " + printable(r.error) + "\n";
    if (threads) {
        for (const StackReply& r : replies) {
            const PyThreadStack* m = main_thread(r.threads);
            for (const PyThreadStack& t : r.threads) {
                if (&t == m) continue;
                out += fmt::format("\n{} thread 0x{:016x}{}:\n", process_label(r.target), t.thread_id,
                                   t.current ? " (took the signal)" : "");
                out += traceback_lines(t.frames, t.frames.size());
            }
        }
    } else if (more_threads) {
        out += fmt::format("\n({} process{} more threads than the main one: --threads shows them)\n", more_threads,
                           more_threads == 1 ? " has" : "es have");
    }
    return out;
}

std::string stacks_json(const std::vector<StackReply>& replies) {
    std::string out;
    {
        JsonWriter w(out);
        w.begin_object();
        w.key("processes");
        w.begin_array();
        for (const StackReply& r : replies) {
            w.begin_object();
            w.field("pid", static_cast<std::int64_t>(r.target.pid));
            w.optional_field("rank", r.target.rank);
            w.field("name", r.target.name);
            w.field("state", std::string(1, r.state));
            if (!r.error.empty()) {
                w.field("error", r.error);
            } else {
                w.field("seconds", r.seconds);
                w.field("partial", r.partial);
            }
            const PyThreadStack* m = main_thread(r.threads);
            w.key("threads");
            w.begin_array();
            for (const PyThreadStack& t : r.threads) {
                w.begin_object();
                w.field("id", fmt::format("0x{:016x}", t.thread_id));
                w.field("main", &t == m);
                w.field("current", t.current);
                w.field("truncated", t.truncated);
                write_frames_json(w, t.frames);
                w.end_object();
            }
            w.end_array();
            w.end_object();
        }
        w.end_array();
        w.key("groups");
        w.begin_array();
        for (const ReplyGroup& g : group_replies(replies)) {
            w.begin_object();
            w.key("pids");
            w.begin_array();
            for (std::size_t i : g.members) w.value(static_cast<std::int64_t>(replies[i].target.pid));
            w.end_array();
            w.key("ranks");
            w.begin_array();
            for (std::size_t i : g.members)
                if (replies[i].target.rank) w.value(*replies[i].target.rank);
            w.end_array();
            w.field("shared_outer", static_cast<std::uint64_t>(g.shared_outer));
            write_frames_json(w, g.frames);
            w.end_object();
        }
        w.end_array();
        w.end_object();
    }
    out += "\n";
    return out;
}

}  // namespace baton::hang
