#include "sample/linux/net_dev.hpp"

#include "core/text_parse.hpp"

namespace baton::os {

void parse_net_dev(std::string_view text, std::vector<NetCounters>& out) {
    out.clear();
    while (!text.empty()) {
        std::string_view line = text::take_line(text);
        std::size_t colon = line.rfind(':');
        if (colon == std::string_view::npos || line.find('|') != std::string_view::npos) continue;
        std::string_view name = line.substr(0, colon);
        text::skip_blanks(name);
        if (name.empty()) continue;
        std::string_view rest = line.substr(colon + 1);
        // rx: bytes packets errs drop fifo frame compressed multicast | tx: bytes ...
        std::uint64_t f[9];
        bool ok = true;
        for (auto& x : f) {
            auto v = text::take_u64(rest);
            if (!v) {
                ok = false;
                break;
            }
            x = *v;
        }
        if (!ok) continue;
        out.push_back(NetCounters{name, f[0], f[8]});
    }
}

}  // namespace baton::os
