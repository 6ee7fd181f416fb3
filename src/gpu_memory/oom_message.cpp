#include "gpu_memory/oom_message.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/text_parse.hpp"

namespace baton::gpu_memory {

namespace {

// The size whose text ends right where `phrase` begins (the message puts most sizes before their name).
std::optional<std::uint64_t> size_before(std::string_view line, std::string_view phrase) {
    const std::size_t at = line.find(phrase);
    if (at == std::string_view::npos) return std::nullopt;
    // Back over the unit, the blank and the number: at most "123456.78 bytes".
    std::size_t start = at;
    int blanks = 0;
    while (start > 0 && at - start < 24) {
        const char c = line[start - 1];
        if (c == ' ') {
            if (++blanks == 2) break;
        } else if (!((c >= '0' && c <= '9') || c == '.' || (c >= 'A' && c <= 'z'))) {
            break;
        }
        --start;
    }
    std::string_view rest = line.substr(start, at - start);
    return take_torch_size(rest);
}

std::optional<std::uint64_t> size_after(std::string_view line, std::string_view phrase) {
    const std::size_t at = line.find(phrase);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view rest = line.substr(at + phrase.size());
    return take_torch_size(rest);
}

// "Process 4121 has 8.40 GiB memory in use." for each other process (2.x).
std::vector<ProcessMemory> other_processes(std::string_view line) {
    std::vector<ProcessMemory> out;
    constexpr std::string_view kProcess = "Process ";
    for (std::size_t at = line.find(kProcess); at != std::string_view::npos && out.size() < 256;
         at = line.find(kProcess, at + 1)) {
        std::string_view rest = line.substr(at + kProcess.size());
        const std::optional<std::uint64_t> pid = text::take_u64(rest);
        if (!pid || *pid > UINT32_MAX || rest.substr(0, 5) != " has ") continue;
        rest.remove_prefix(5);
        const std::optional<std::uint64_t> bytes = take_torch_size(rest);
        if (!bytes || rest.substr(0, 15) != " memory in use.") continue;
        out.push_back({static_cast<std::uint32_t>(*pid), *bytes});
    }
    return out;
}

}  // namespace

std::string torch_size(double bytes) {
    if (bytes >= 1073741824.0) return fmt::format("{:.2f} GiB", bytes / 1073741824.0);
    if (bytes >= 1048576.0) return fmt::format("{:.2f} MiB", bytes / 1048576.0);
    if (bytes >= 1024.0) return fmt::format("{:.2f} KiB", bytes / 1024.0);
    return fmt::format("{:.0f} bytes", std::max(0.0, bytes));
}

std::optional<std::uint64_t> take_torch_size(std::string_view& text) {
    std::string_view s = text;
    text::skip_blanks(s);
    const std::optional<double> v = text::take_double(s);
    if (!v || s.empty() || s.front() != ' ') return std::nullopt;
    s.remove_prefix(1);
    static constexpr std::array<std::pair<std::string_view, double>, 5> kUnits = {
        {{"bytes", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}}};
    for (const auto& [unit, scale] : kUnits)
        if (s.substr(0, unit.size()) == unit) {
            const double bytes = std::round(*v * scale);
            if (!(bytes >= 0 && bytes < 1.8e19)) return std::nullopt;
            text = s.substr(unit.size());
            return static_cast<std::uint64_t>(bytes);
        }
    return std::nullopt;
}

std::optional<OomMessage> parse_oom_message(std::string_view line) {
    const bool allocator = line.find("CUDA out of memory") != std::string_view::npos;
    if (!allocator && line.find("OutOfMemoryError") == std::string_view::npos &&
        line.find("CUDA error: out of memory") == std::string_view::npos)
        return std::nullopt;
    OomMessage m;
    m.requested_bytes = size_after(line, "Tried to allocate ");
    if (!m.requested_bytes) return m;
    if (const std::size_t g = line.find("GPU ", line.find("Tried to allocate ")); g != std::string_view::npos) {
        std::string_view rest = line.substr(g + 4);
        if (const std::optional<std::uint64_t> n = text::take_u64(rest); n && *n < 1024)
            m.gpu = static_cast<unsigned>(*n);
    }
    m.allowed_bytes = size_before(line, " allowed;");
    if (line.find("has a total capacity of ") != std::string_view::npos) {  // 2.x
        m.capacity_bytes = size_after(line, "has a total capacity of ");
        m.free_bytes = size_after(line, " of which ");
        m.allocated_bytes = size_after(line, "Of the allocated memory ");
        m.unallocated_bytes = size_before(line, " is reserved by PyTorch but unallocated");
        m.process_bytes = size_after(line, "this process has ");
        m.others = other_processes(line);
        if (m.allocated_bytes && m.unallocated_bytes && *m.allocated_bytes <= UINT64_MAX - *m.unallocated_bytes)
            m.reserved_bytes = *m.allocated_bytes + *m.unallocated_bytes;
    } else {  // 1.x
        m.capacity_bytes = size_before(line, " total capacity");
        m.allocated_bytes = size_before(line, " already allocated");
        m.free_bytes = size_before(line, " free;");
        m.reserved_bytes = size_before(line, " reserved in total by PyTorch");
        if (!m.reserved_bytes) m.reserved_bytes = size_before(line, " cached)");
        if (m.reserved_bytes && m.allocated_bytes && *m.reserved_bytes >= *m.allocated_bytes)
            m.unallocated_bytes = *m.reserved_bytes - *m.allocated_bytes;
    }
    return m;
}

}  // namespace baton::gpu_memory
