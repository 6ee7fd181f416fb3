// The bearer token: read from its file, compared exactly.
#include <gtest/gtest.h>

#include "serve/auth.hpp"
#include "serve/service.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::serve;

TEST(BearerToken, MatchesOnlyTheExactToken) {
    EXPECT_TRUE(bearer_matches("Bearer s3cret-token", "s3cret-token"));
    EXPECT_TRUE(bearer_matches("bearer s3cret-token", "s3cret-token"));  // the scheme is case-insensitive
    EXPECT_FALSE(bearer_matches("Bearer s3cret-tokeN", "s3cret-token"));
    EXPECT_FALSE(bearer_matches("Bearer s3cret-token2", "s3cret-token"));
    EXPECT_FALSE(bearer_matches("Bearer s3cret", "s3cret-token"));
    EXPECT_FALSE(bearer_matches("Bearer ", "s3cret-token"));
    EXPECT_FALSE(bearer_matches("s3cret-token", "s3cret-token"));
    EXPECT_FALSE(bearer_matches("Basic czNjcmV0LXRva2Vu", "s3cret-token"));
    EXPECT_FALSE(bearer_matches("", "s3cret-token"));
    EXPECT_FALSE(bearer_matches("Bearer ", ""));  // no token configured never matches
}

TEST(BearerToken, ReadsTheFirstLineTrimmed) {
    test::TempDir d;
    d.write("t", "  abc123 \r\nsecond line ignored\n");
    auto t = read_token_file(d.path() + "/t");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(*t, "abc123");
    d.write("empty", "\n \n");
    EXPECT_FALSE(read_token_file(d.path() + "/empty").ok());
    d.write("big", std::string(5000, 'x'));
    EXPECT_FALSE(read_token_file(d.path() + "/big").ok());
    auto missing = read_token_file(d.path() + "/missing");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("cannot read the token file"), std::string::npos);
}

// The Host rule of a loopback agent: the port dropped, case and a final dot ignored, brackets kept
// for IPv6; a name that merely starts or ends like an allowed one is another name.
TEST(HostAllowed, OnlyTheAgentsOwnNames) {
    const std::vector<std::string> allowed = {"localhost", "127.0.0.1", "[::1]", "gpu-01"};
    for (const char* ok :
         {"localhost", "LOCALHOST:22866", "localhost.", "127.0.0.1:22866", "[::1]", "[::1]:80", "Gpu-01:22866"})
        EXPECT_TRUE(host_allowed(ok, allowed)) << ok;
    for (const char* no : {"evil.example", "localhost.evil.example", "evil-localhost", "127.0.0.1.nip.io", "[::1",
                           "[::1]x", "[::2]:80", "gpu-01.evil", "127.0.0.2", ":22866", "localhost:22866:1", ""})
        EXPECT_FALSE(host_allowed(no, allowed)) << no;
    EXPECT_TRUE(host_allowed("anything", {})) << "no list: a listener behind its token";
    EXPECT_TRUE(host_allowed("", {}));
}
