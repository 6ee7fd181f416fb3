#include "sample/linux/meminfo.hpp"

#include "core/text_parse.hpp"

namespace baton::os {

bool parse_meminfo(std::string_view text, MemInfo& out) {
    out = MemInfo{};
    bool have_total = false;
    while (!text.empty()) {
        std::string_view line = text::take_line(text);
        std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        std::string_view key = line.substr(0, colon);
        std::string_view rest = line.substr(colon + 1);
        auto v = text::take_u64(rest);
        if (!v) continue;
        std::uint64_t bytes = *v * 1024;  // every field we read is in kB
        if (key == "MemTotal") {
            out.total = bytes;
            have_total = true;
        } else if (key == "MemFree")
            out.free = bytes;
        else if (key == "MemAvailable")
            out.available = bytes;
        else if (key == "Buffers")
            out.buffers = bytes;
        else if (key == "Cached")
            out.cached = bytes;
        else if (key == "Shmem")
            out.shmem = bytes;
        else if (key == "SReclaimable")
            out.sreclaimable = bytes;
        else if (key == "SwapTotal")
            out.swap_total = bytes;
        else if (key == "SwapFree")
            out.swap_free = bytes;
    }
    return have_total;
}

}  // namespace baton::os
