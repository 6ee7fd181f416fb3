#include "sample/linux/vmstat.hpp"

#include "core/text_parse.hpp"

namespace baton::os {

void parse_vmstat(std::string_view text, VmStat& out) {
    out = VmStat{};
    while (!text.empty()) {
        std::string_view line = text::take_line(text);
        // ~170 lines, a few wanted, all starting with 'p' or 'o': skip the rest cheaply.
        if (line.empty() || (line[0] != 'p' && line[0] != 'o')) continue;
        std::string_view key = text::take_word(line);
        if (key.starts_with("pgsteal_")) {
            if (auto v = text::take_u64(line)) out.reclaim_activity = out.reclaim_activity.value_or(0) + *v;
            continue;
        }
        std::optional<std::uint64_t>* slot = key == "pswpin"       ? &out.pswpin
                                             : key == "pswpout"    ? &out.pswpout
                                             : key == "pgmajfault" ? &out.pgmajfault
                                             : key == "oom_kill"   ? &out.oom_kill
                                                                   : nullptr;
        if (slot) *slot = text::take_u64(line);
    }
    if (out.reclaim_activity) *out.reclaim_activity += out.pswpin.value_or(0) + out.pswpout.value_or(0);
}

}  // namespace baton::os
