#include "sample/linux/proc_stat.hpp"

#include "core/text_parse.hpp"

namespace baton::os {

namespace {

bool parse_cpu_numbers(std::string_view rest, CpuTicks& t) {
    std::uint64_t* fields[] = {&t.user, &t.nice, &t.system, &t.idle, &t.iowait, &t.irq, &t.softirq, &t.steal};
    int n = 0;
    for (auto* f : fields) {
        auto v = text::take_u64(rest);
        if (!v) break;
        *f = *v;
        ++n;
    }
    return n >= 4;
}

}  // namespace

bool parse_proc_stat(std::string_view text, ProcStat& out) {
    out.cores.clear();
    out.context_switches.reset();
    out.boot_time_seconds.reset();
    out.forks.reset();
    out.procs_running = out.procs_blocked = 0;
    bool have_total = false;
    while (!text.empty()) {
        std::string_view line = text::take_line(text);
        std::string_view rest = line;
        std::string_view word = text::take_word(rest);
        if (word == "cpu") {
            if (!parse_cpu_numbers(rest, out.total)) return false;
            have_total = true;
        } else if (word.size() > 3 && word.substr(0, 3) == "cpu") {
            std::string_view id = word.substr(3);
            auto n = text::parse_u64(id);
            CpuTicks t;
            if (!n || !parse_cpu_numbers(rest, t)) return false;
            out.cores.emplace_back(static_cast<unsigned>(*n), t);
        } else if (word == "ctxt") {
            out.context_switches = text::take_u64(rest);
        } else if (word == "procs_running") {
            out.procs_running = static_cast<unsigned>(text::take_u64(rest).value_or(0));
        } else if (word == "procs_blocked") {
            out.procs_blocked = static_cast<unsigned>(text::take_u64(rest).value_or(0));
        } else if (word == "processes") {
            out.forks = text::take_u64(rest);
        } else if (word == "btime") {
            out.boot_time_seconds = text::take_u64(rest);
            // A boot after the year 36812 is a damaged file: unknown, never a start time that
            // overflows.
            if (out.boot_time_seconds && *out.boot_time_seconds > (1ull << 40)) out.boot_time_seconds.reset();
        }
    }
    return have_total;
}

}  // namespace baton::os
