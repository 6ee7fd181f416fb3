// --listen parsing, hostile input included, and the loopback rule the token depends on.
#include <gtest/gtest.h>

#include "core/listen_address.hpp"

using namespace baton;

TEST(ListenAddress, ParsesIpv4Ipv6AndPortAlone) {
    auto a = parse_listen_address("127.0.0.1:9835");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->host, "127.0.0.1");
    EXPECT_EQ(a->port, 9835);
    EXPECT_TRUE(a->loopback());
    EXPECT_EQ(a->text(), "127.0.0.1:9835");

    auto b = parse_listen_address("[::1]:0");
    ASSERT_TRUE(b.ok());
    EXPECT_TRUE(b->ipv6);
    EXPECT_EQ(b->host, "::1");
    EXPECT_TRUE(b->loopback());
    EXPECT_EQ(b->text(), "[::1]:0");

    auto c = parse_listen_address(":9100");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->host, "0.0.0.0");
    EXPECT_FALSE(c->loopback());
}

TEST(ListenAddress, LoopbackIsTheWhole127Net) {
    EXPECT_TRUE(parse_listen_address("127.1.2.3:1")->loopback());
    EXPECT_FALSE(parse_listen_address("0.0.0.0:1")->loopback());
    EXPECT_FALSE(parse_listen_address("10.0.0.1:1")->loopback());
    EXPECT_FALSE(parse_listen_address("128.0.0.1:1")->loopback());
    EXPECT_FALSE(parse_listen_address("[::]:1")->loopback());
    EXPECT_FALSE(parse_listen_address("[::ffff:10.0.0.1]:1")->loopback());
}

TEST(ListenAddress, RefusesWhatIsNotAnAddressAndPort) {
    for (const char* bad : {"",
                            "9835",
                            "localhost:9835",
                            "127.0.0.1",
                            "127.0.0.1:",
                            "127.0.0.1:65536",
                            "127.0.0.1:-1",
                            "127.0.0.1:+80",
                            "127.0.0.1:80x",
                            "127.0.0.1:999999999999999999999",
                            "::1:9835",
                            "[::1:9835",
                            "[]:80",
                            "[127.0.0.1]:80",
                            "256.0.0.1:80",
                            "1.2.3:80",
                            "127.0.0.1 :80",
                            " 127.0.0.1:80",
                            "127.0.0.1:8 0",
                            "[::1]x:80"}) {
        auto r = parse_listen_address(bad);
        EXPECT_FALSE(r.ok()) << bad;
        if (!r.ok()) {
            EXPECT_NE(r.error().message.find("--listen"), std::string::npos) << r.error().message;
            EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
        }
    }
}
