// --hosts as typed: each HOST[:PORT] with the default port where none is given; hostile lists refused
// with the entry named.
#include <gtest/gtest.h>

#include "serve/host_poller.hpp"
#include "serve/hosts.hpp"

using namespace baton;
using namespace baton::serve;

TEST(Hosts, NamesAddressesAndPorts) {
    auto h = parse_hosts(" gpu1, gpu2:9900 ,10.0.0.7,[fd00::7]:81,[::1],", 22866);
    ASSERT_TRUE(h.ok()) << h.error().message;
    ASSERT_EQ(h->size(), 5u);
    EXPECT_EQ((*h)[0].name, "gpu1");
    EXPECT_EQ((*h)[0].url, "http://gpu1:22866");
    EXPECT_EQ((*h)[1].url, "http://gpu2:9900");
    EXPECT_EQ((*h)[2].url, "http://10.0.0.7:22866");
    EXPECT_EQ((*h)[3].url, "http://[fd00::7]:81");
    EXPECT_EQ((*h)[4].url, "http://[::1]:22866");
    EXPECT_STREQ(host_state_name(HostState::unauthorized), "unauthorized");
}

TEST(Hosts, HostileListsAreRefusedWithTheEntry) {
    for (const char* bad : {"", ",", " , ", "a:0", "a:65536", "a:99999999999", "a b", "a/b", "[zz]", "[]", "[::1",
                            "[::1]x", "[::1]:", "a:", ":80", "a:-1", "a:1:2", "a\nb", "http://a"}) {
        auto h = parse_hosts(bad, 22866);
        ASSERT_FALSE(h.ok()) << bad;
        EXPECT_EQ(h.error().message.find('\n'), std::string::npos) << bad;
        EXPECT_EQ(h.error().code, ErrorCode::invalid_argument) << bad;
    }
    EXPECT_NE(parse_hosts("a,b,a:22866", 22866).error().message.find("named twice"), std::string::npos);
    std::string many;
    for (int i = 0; i < 257; ++i) many += "h" + std::to_string(i) + ",";
    EXPECT_NE(parse_hosts(many, 22866).error().message.find("at most 256"), std::string::npos);
    EXPECT_FALSE(parse_hosts(std::string(300, 'a'), 22866).ok());
}

TEST(Hosts, AnAgentsFindingsAreReadAndAnythingElseRefused) {
    auto f = parse_findings_answer(
        R"({"schema_version":1,"window":{},"findings":[{"rule":"gpu_memory_near_oom","severity":"critical",)"
        R"("subject":"gpu:0","job":"slurm:4242","summary":"GPU0 memory reached 97 %","evidence":[]},)"
        R"({"rule":"gpu_underused","severity":"info","subject":"gpu:1","summary":"GPU1 is busy"}]})");
    ASSERT_TRUE(f.ok()) << f.error().message;
    ASSERT_EQ(f->size(), 2u);
    EXPECT_EQ((*f)[0].severity, diagnose::Severity::critical);
    EXPECT_EQ((*f)[0].job, "slurm:4242");
    EXPECT_EQ((*f)[1].subject, "gpu:1");
    EXPECT_TRUE(parse_findings_answer(R"({"findings":[]})")->empty());
    for (const char* bad : {"", "null", "[]", "{}", R"({"findings":{}})", R"({"findings":[1]})",
                            R"({"findings":[{"severity":"critical"}]})", R"({"findings":[{"rule":"r","summary":5}]})",
                            "{\"findings\":[", "<html>"})
        EXPECT_FALSE(parse_findings_answer(bad).ok()) << bad;
}
