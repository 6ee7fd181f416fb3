#include "core/listen_address.hpp"

#include <arpa/inet.h>

#include "core/text_parse.hpp"

namespace baton {

bool ListenAddress::loopback() const {
    if (ipv6) {
        in6_addr a{};
        return inet_pton(AF_INET6, host.c_str(), &a) == 1 && IN6_IS_ADDR_LOOPBACK(&a);
    }
    in_addr a{};
    return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

std::string ListenAddress::text() const {
    return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> parse_listen_address(const std::string& text) {
    auto bad = [&](const std::string& why) {
        return make_error("--listen '" + text + "': " + why +
                          " (expected ADDRESS:PORT, e.g. 127.0.0.1:22866, [::1]:22866 or :22866)");
    };
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos) return bad("no port");
    ListenAddress a;
    std::string host = text.substr(0, colon);
    const std::string port = text.substr(colon + 1);
    const std::optional<std::uint64_t> p = port.size() <= 5 ? text::parse_u64(port) : std::nullopt;
    if (!p || port.find_first_not_of("0123456789") != std::string::npos || *p > 65535)
        return bad("the port must be a number from 0 to 65535");
    a.port = static_cast<int>(*p);
    if (host.empty()) {
        a.host = "0.0.0.0";
        return a;
    }
    if (host.front() == '[') {
        if (host.size() < 3 || host.back() != ']') return bad("an IPv6 address goes in brackets");
        host = host.substr(1, host.size() - 2);
        in6_addr v6{};
        if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return bad("'" + host + "' is not an IPv6 address");
        a.ipv6 = true;
        a.host = host;
        return a;
    }
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) != 1)
        return bad("'" + host + "' is not a numeric IPv4 address (IPv6 goes in brackets)");
    a.host = host;
    return a;
}

}  // namespace baton
