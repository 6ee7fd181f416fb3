#include "launch/route.hpp"

#include <arpa/inet.h>
#include <bit>
#include <charconv>
#include <vector>

namespace baton::launch {

namespace {

// A hex field of the table: the kernel prints the address's 32 bits as they lie in memory
// (network order read as a native integer), as inet_pton stores them.
std::optional<std::uint32_t> hex(std::string_view s) {
    std::uint32_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        const std::size_t start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
        if (i > start) out.push_back(line.substr(start, i - start));
    }
    return out;
}

}  // namespace

std::optional<std::string> route_interface(std::string_view table, const std::string& address) {
    in_addr a{};
    if (inet_pton(AF_INET, address.c_str(), &a) != 1) return std::nullopt;
    const std::uint32_t addr = a.s_addr;
    if ((ntohl(addr) >> 24) == 127) return std::string("lo");
    constexpr std::uint32_t kRouteUp = 0x1;
    std::optional<std::string> best;
    int best_prefix = -1;
    long best_metric = 0;
    bool header = true;
    while (!table.empty()) {
        const std::size_t nl = table.find('\n');
        const std::string_view line = table.substr(0, nl);
        table = nl == std::string_view::npos ? std::string_view() : table.substr(nl + 1);
        if (header) {  // "Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT"
            header = false;
            continue;
        }
        const std::vector<std::string_view> f = fields(line);
        if (f.size() < 8) continue;
        const auto dest = hex(f[1]), flags = hex(f[3]), mask = hex(f[7]);
        long metric = 0;
        const auto [end, ec] = std::from_chars(f[6].data(), f[6].data() + f[6].size(), metric);
        if (!dest || !flags || !mask || ec != std::errc() || end != f[6].data() + f[6].size()) continue;
        if (!(*flags & kRouteUp) || (addr & *mask) != *dest) continue;
        const int prefix = std::popcount(*mask);
        if (prefix > best_prefix || (prefix == best_prefix && metric < best_metric)) {
            best = std::string(f[0]);
            best_prefix = prefix;
            best_metric = metric;
        }
    }
    return best;
}

}  // namespace baton::launch
