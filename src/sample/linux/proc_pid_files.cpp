#include "sample/linux/proc_pid_files.hpp"

#include "core/text_parse.hpp"

namespace baton::os {

void parse_pid_status(std::string_view text, PidStatus& out) {
    out = PidStatus{};
    while (!text.empty()) {
        std::string_view line = text::take_line(text);
        if (auto v = text::value_after_key(line, "Uid")) {
            std::string_view s = *v;
            if (auto uid = text::take_u64(s)) out.real_uid = static_cast<std::uint32_t>(*uid);
        } else if (auto ns = text::value_after_key(line, "NSpid")) {
            std::string_view s = *ns;
            while (auto p = text::take_u64(s)) out.innermost_pid = static_cast<std::uint32_t>(*p);
        }
    }
}

void join_cmdline(std::string_view raw, std::string& out) {
    out.clear();
    while (!raw.empty() && raw.back() == '\0') raw.remove_suffix(1);
    out.reserve(raw.size());
    for (char c : raw) out.push_back(c == '\0' ? ' ' : c);
}

bool parse_pid_io(std::string_view text, PidIo& out) {
    int seen = 0;
    while (!text.empty()) {
        std::string_view line = text::take_line(text);
        if (auto v = text::value_after_key(line, "read_bytes")) {
            if (auto n = text::parse_u64(*v)) out.read_bytes = *n, ++seen;
        } else if (auto w = text::value_after_key(line, "write_bytes")) {
            if (auto n = text::parse_u64(*w)) out.write_bytes = *n, ++seen;
        }
    }
    return seen == 2;
}

bool parse_pid_schedstat(std::string_view text, PidSchedStat& out) {
    auto runtime = text::take_u64(text);
    auto delay = text::take_u64(text);
    auto switches = text::take_u64(text);
    if (!runtime || !delay || !switches) return false;
    out.runtime_ns = *runtime;
    out.switches_in = *switches;
    return true;
}

}  // namespace baton::os
