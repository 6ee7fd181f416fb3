#include "sample/linux/diskstats.hpp"

#include "core/text_parse.hpp"

namespace baton::os {

void parse_diskstats(std::string_view text, std::vector<DiskCounters>& out) {
    out.clear();
    while (!text.empty()) {
        std::string_view rest = text::take_line(text);
        // major minor name reads merged sectors ms writes merged sectors ms inflight io_ticks ...
        if (!text::take_u64(rest) || !text::take_u64(rest)) continue;
        DiskCounters d;
        d.name = text::take_word(rest);
        std::uint64_t f[10];
        bool ok = !d.name.empty();
        for (auto& x : f) {
            auto v = ok ? text::take_u64(rest) : std::nullopt;
            if (!v) {
                ok = false;
                break;
            }
            x = *v;
        }
        if (!ok) continue;
        d.reads = f[0];
        d.sectors_read = f[2];
        d.read_ms = f[3];
        d.writes = f[4];
        d.sectors_written = f[6];
        d.write_ms = f[7];
        d.io_ticks_ms = f[9];
        out.push_back(d);
    }
}

}  // namespace baton::os
