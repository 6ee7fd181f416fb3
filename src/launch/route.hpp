// Which network interface reaches an address: the kernel's IPv4 routing table (/proc/net/route),
// longest prefix first, then the lowest metric; 127.0.0.0/8 is the loopback's (its routes live in the
// local table, which that file does not show). `baton launch --nccl socket|ib` names this interface
// in NCCL_SOCKET_IFNAME: NCCL's own guess takes the first interface that is up, often a docker bridge
// or a management port that does not reach the other nodes. Pure, on the file's text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::launch {

// The interface that routes to `address` (an IPv4 address in dotted form), or nullopt when none
// does or the address is not IPv4. Malformed lines are skipped.
std::optional<std::string> route_interface(std::string_view proc_net_route, const std::string& address);

}  // namespace baton::launch
