// The interface that routes to the master address, from /proc/net/route's text: the longest
// prefix wins, then the lowest metric; routes that are down are skipped; loopback is lo.
#include "launch/route.hpp"

#include <gtest/gtest.h>

using baton::launch::route_interface;

namespace {

// A node with a default route on eth0 (metric 100) and another on wlan0 (600), its LAN 192.168.1.0/24
// on eth0, the InfiniBand network 10.0.0.0/8 on ib0, 10.1.0.0/16 on ib1, a docker bridge
// 172.17.0.0/16 and a route that is down (flags 0). Fields as the kernel prints them.
constexpr const char* kTable =
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
    "eth0\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
    "wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n"
    "eth0\t0001A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n"
    "ib0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n"
    "ib1\t0000010A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
    "docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
    "eth9\t0002A8C0\t00000000\t0000\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";

}  // namespace

TEST(Route, TheLongestPrefixThenTheLowestMetric) {
    EXPECT_EQ(route_interface(kTable, "192.168.1.20"), "eth0");
    EXPECT_EQ(route_interface(kTable, "10.2.3.4"), "ib0");
    EXPECT_EQ(route_interface(kTable, "10.1.3.4"), "ib1") << "a /16 beats the /8";
    EXPECT_EQ(route_interface(kTable, "8.8.8.8"), "eth0") << "the default route of the lowest metric";
    EXPECT_EQ(route_interface(kTable, "172.17.0.2"), "docker0");
    EXPECT_EQ(route_interface(kTable, "192.168.2.7"), "eth0") << "eth9's route is down: the default";
    EXPECT_EQ(route_interface(kTable, "127.0.0.1"), "lo");
    EXPECT_EQ(route_interface(kTable, "127.3.2.1"), "lo");
}

TEST(Route, NoRouteOrHostileTextIsNone) {
    EXPECT_EQ(route_interface("", "10.0.0.1"), std::nullopt);
    EXPECT_EQ(route_interface(kTable, "::1"), std::nullopt) << "IPv6 is not read from this table";
    EXPECT_EQ(route_interface(kTable, "node07"), std::nullopt) << "names are resolved by the caller";
    EXPECT_EQ(route_interface("Iface\tDestination\n"
                              "eth0\t0001A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n",
                              "8.8.8.8"),
              std::nullopt)
        << "no default route";
    for (const char* bad : {"Iface\nx\n", "Iface\neth0\tzz\t0\t1\t0\t0\t0\t0\n", "Iface\neth0 00000000 0 1 0 0 -x 0\n",
                            "\n\n\n", "Iface\neth0\t00000000\t0\t0003\t0\t0\t99999999999999999999\t00000000\n"})
        EXPECT_EQ(route_interface(bad, "8.8.8.8"), std::nullopt) << bad;
}
