#include "sample/linux/proc_pid_stat.hpp"

#include <cstring>

#include "core/text_parse.hpp"

namespace baton::os {

bool parse_pid_stat(std::string_view text, PidStat& out) {
    std::string_view s = text;
    auto pid = text::take_u64(s);
    std::size_t open = s.find('(');
    // The last ')' ends the name; memrchr is vectorised, and the line is ~300 bytes.
    const void* last = s.empty() ? nullptr : memrchr(s.data(), ')', s.size());
    std::size_t close =
        last ? static_cast<std::size_t>(static_cast<const char*>(last) - s.data()) : std::string_view::npos;
    if (!pid || open == std::string_view::npos || close == std::string_view::npos || close < open) return false;
    out.pid = static_cast<std::uint32_t>(*pid);
    out.comm = s.substr(open + 1, close - open - 1);
    // Fields 3..24 (1-based, as in proc(5)), walked in one pass: the kernel separates
    // fields by exactly one space, so each space starts the next field. Fields we do not
    // keep are only counted: parsing each one would double the cost of the hottest
    // function in baton. Kept fields are unsigned decimals.
    const char* p = s.data() + close + 1;
    const char* const end = s.data() + s.size();
    if (end - p < 3 || p[0] != ' ') return false;
    out.state = p[1];
    p += 2;
    // Bit f set: field f is kept.
    constexpr std::uint32_t kept = (1u << 4) | (1u << 14) | (1u << 15) | (1u << 20) | (1u << 22) | (1u << 24);
    int field = 3;
    while (field < 24) {
        while (p < end && *p != ' ') {
            if (*p == '\n') return false;  // the line ended before field 24
            ++p;
        }
        if (p == end) return false;
        ++p;  // past the space: at the first character of the next field
        ++field;
        if (!(kept & (1u << field))) continue;
        std::uint64_t v = 0;
        const char* digits = p;
        while (p < end && static_cast<unsigned>(*p - '0') < 10) {
            if (v > (~std::uint64_t{0} - 9) / 10) return false;  // would overflow
            v = v * 10 + static_cast<std::uint64_t>(*p - '0');
            ++p;
        }
        if (p == digits || (p < end && *p != ' ' && *p != '\n')) return false;
        switch (field) {
            case 4:
                out.ppid = static_cast<std::uint32_t>(v);
                break;
            case 14:
                out.utime = v;
                break;
            case 15:
                out.stime = v;
                break;
            case 20:
                out.num_threads = static_cast<unsigned>(v);
                break;
            case 22:
                out.starttime = v;
                break;
            default:
                out.rss_pages = v;
                break;  // 24
        }
    }
    return true;
}

}  // namespace baton::os
