// Parser for /proc/meminfo (values in kB there, in bytes here).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace baton::os {

struct MemInfo {
    std::uint64_t total = 0, free = 0, buffers = 0, cached = 0, shmem = 0, sreclaimable = 0;
    std::optional<std::uint64_t> available;  // MemAvailable: kernel >= 3.14
    std::uint64_t swap_total = 0, swap_free = 0;
};

// False when MemTotal is missing (not a meminfo file).
bool parse_meminfo(std::string_view text, MemInfo& out);

}  // namespace baton::os
