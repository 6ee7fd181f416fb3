#include "report/clean_view.hpp"
#include "core/units.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/json_writer.hpp"

namespace baton::report {

namespace {

std::string age_text(double s) {
    if (s < 120) return fmt::format("{:.0f}s", s);
    if (s < 7200) return fmt::format("{:.0f}m", s / 60);
    if (s < 172800) return fmt::format("{:.0f}h", s / 3600);
    return fmt::format("{:.0f}d", s / 86400);
}

std::string gib_text(std::uint64_t bytes) {
    return bytes ? format_gib(static_cast<double>(bytes)) : "-";
}

void leftovers_json(JsonWriter& w, const std::vector<clean::Leftover>& list) {
    w.key("leftovers");
    w.begin_array();
    for (const clean::Leftover& l : list) {
        w.begin_object();
        w.field("kind", leftover_kind_name(l.kind));
        w.field("pid", l.pid);
        w.field("ppid", l.ppid);
        w.field("uid", l.uid);
        w.field("user", l.user);
        w.field("name", l.name);
        w.field("command", l.command);
        w.field("age_seconds", l.age_seconds);
        w.field("gpu_memory_bytes", l.gpu_memory_bytes);
        w.key("gpus");
        w.begin_array();
        for (unsigned g : l.gpus) w.value(g);
        w.end_array();
        w.field("reason", l.reason);
        w.field("endable", l.endable);
        if (!l.endable) w.field("left_alone", l.left_alone);
        w.end_object();
    }
    w.end_array();
}

std::string end_line(const clean::EndResult& r, double grace_seconds) {
    switch (r.outcome) {
        case clean::EndOutcome::ended:
            return fmt::format("pid {}: ended (SIGTERM)\n", r.pid);
        case clean::EndOutcome::killed:
            return fmt::format("pid {}: killed (SIGKILL after {:.0f} s)\n", r.pid, grace_seconds);
        case clean::EndOutcome::gone_before:
            return fmt::format("pid {}: had ended already\n", r.pid);
        case clean::EndOutcome::reused:
            return fmt::format("pid {}: now names another process (started after the listing): left alone\n", r.pid);
        case clean::EndOutcome::refused:
            return fmt::format("pid {}: not signalled: {}\n", r.pid, r.detail);
        case clean::EndOutcome::survived:
            return fmt::format("pid {}: still there after SIGKILL (waiting in the kernel, state D?)\n", r.pid);
    }
    return "";
}

}  // namespace

std::string leftovers_table(const std::vector<clean::Leftover>& list) {
    std::string out =
        fmt::format("{:>8} {:<10} {:>5} {:>9} {:<14} {}\n", "PID", "USER", "AGE", "GPU MEM", "KIND", "COMMAND");
    for (const clean::Leftover& l : list) {
        std::string command = l.command.empty() ? "[" + l.name + "]" : l.command;
        if (command.size() > 60) command = command.substr(0, 57) + "...";
        out += fmt::format("{:>8} {:<10} {:>5} {:>9} {:<14} {}\n", l.pid, l.user.substr(0, 10), age_text(l.age_seconds),
                           gib_text(l.gpu_memory_bytes), leftover_kind_name(l.kind), command);
        out += "         " + l.reason + "\n";
        if (!l.endable) out += "         left alone: " + l.left_alone + "\n";
    }
    return out;
}

std::string end_lines(const std::vector<clean::EndResult>& ended, double grace_seconds, const clean::EndTally& tally) {
    std::string out;
    for (const clean::EndResult& r : ended) out += end_line(r, grace_seconds);
    out += "GPU memory freed: " +
           (tally.gpu_memory_freed_bytes ? gib_text(tally.gpu_memory_freed_bytes) : "none (none of them held any)") +
           "\n";
    return out;
}

std::string clean_json(const std::vector<clean::Leftover>& leftovers, const std::vector<clean::EndResult>& ended,
                       bool dry_run, const clean::EndTally& tally) {
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    w.field("dry_run", dry_run);
    leftovers_json(w, leftovers);
    w.key("ended");
    w.begin_array();
    for (const clean::EndResult& r : ended) {
        w.begin_object();
        w.field("pid", r.pid);
        w.field("outcome", end_outcome_name(r.outcome));
        if (!r.detail.empty()) w.field("error", r.detail);
        w.end_object();
    }
    w.end_array();
    w.field("gpu_memory_freed_bytes", tally.gpu_memory_freed_bytes);
    w.end_object();
    w.finish();
    out.push_back('\n');
    return out;
}

}  // namespace baton::report
