// --listen parsing, hostile input included, and the loopback rule the token depends on.
#include <gtest/gtest.h>

#include "core/config.hpp"
#include "core/listen_address.hpp"

using namespace baton;

TEST(ListenAddress, ParsesIpv4Ipv6AndPortAlone) {
    auto a = parse_listen_address("127.0.0.1:22866");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->host, "127.0.0.1");
    EXPECT_EQ(a->port, 22866);
    EXPECT_TRUE(a->loopback());
    EXPECT_EQ(a->text(), "127.0.0.1:22866");

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
                            "22866",
                            "localhost:22866",
                            "127.0.0.1",
                            "127.0.0.1:",
                            "127.0.0.1:65536",
                            "127.0.0.1:-1",
                            "127.0.0.1:+80",
                            "127.0.0.1:80x",
                            "127.0.0.1:999999999999999999999",
                            "::1:22866",
                            "[::1:22866",
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

// The default port is where no exporter and nothing a training box runs listens: outside the
// exporters' 9100-9999 (node_exporter 9100, dcgm-exporter 9400, nvidia_gpu_exporter 9835), below the
// ephemeral range, none of the usual ML and monitoring ports; the config's default uses it.
TEST(ListenAddress, TheDefaultPortClashesWithNoExporter) {
    EXPECT_TRUE(baton::kDefaultAgentPort < 9100 || baton::kDefaultAgentPort > 9999);
    EXPECT_LT(baton::kDefaultAgentPort, 32768);
    EXPECT_GT(baton::kDefaultAgentPort, 1023);
    for (int taken : {3000, 5000, 6006, 6379, 6817, 6818, 6819, 8000, 8080, 8265, 8786, 8787, 8888, 29400, 29500})
        EXPECT_NE(baton::kDefaultAgentPort, taken);
    const baton::Result<baton::ListenAddress> def = baton::parse_listen_address(baton::Config{}.serve.listen);
    ASSERT_TRUE(def.ok());
    EXPECT_EQ(def->port, baton::kDefaultAgentPort);
    EXPECT_TRUE(def->loopback());
}
