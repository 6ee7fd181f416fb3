#include "sample/linux/proc_pid_stat.hpp"

#include "core/text_parse.hpp"

namespace baton::os {

bool parse_pid_stat(std::string_view text, PidStat& out) {
    std::string_view s = text;
    auto pid = text::take_u64(s);
    std::size_t open = s.find('(');
    std::size_t close = s.rfind(')');
    if (!pid || open == std::string_view::npos || close == std::string_view::npos || close < open) return false;
    out.pid = static_cast<std::uint32_t>(*pid);
    out.comm = s.substr(open + 1, close - open - 1);
    s.remove_prefix(close + 1);
    text::skip_blanks(s);
    if (s.empty()) return false;
    out.state = s[0];
    s.remove_prefix(1);
    // Fields 4.. (1-based, as in proc(5)); we keep the ones we need while walking.
    for (int field = 4; field <= 24; ++field) {
        std::optional<std::uint64_t> v;
        if (field == 16 || field == 17 || field == 18 || field == 19 || field == 21) {
            // cutime, cstime, priority, nice, itrealvalue: signed
            auto sv = text::take_i64(s);
            if (!sv) return false;
            v = static_cast<std::uint64_t>(*sv);
        } else if (field == 7 || field == 8 || field == 5 || field == 6) {
            // tty_nr, tpgid (-1 when none), pgrp, session
            auto sv = text::take_i64(s);
            if (!sv) return false;
            v = static_cast<std::uint64_t>(*sv);
        } else {
            v = text::take_u64(s);
            if (!v) return false;
        }
        switch (field) {
            case 4:
                out.ppid = static_cast<std::uint32_t>(*v);
                break;
            case 10:
                out.minflt = *v;
                break;
            case 12:
                out.majflt = *v;
                break;
            case 14:
                out.utime = *v;
                break;
            case 15:
                out.stime = *v;
                break;
            case 20:
                out.num_threads = static_cast<unsigned>(*v);
                break;
            case 22:
                out.starttime = *v;
                break;
            case 24:
                out.rss_pages = *v;
                break;
            default:
                break;
        }
    }
    return true;
}

}  // namespace baton::os
