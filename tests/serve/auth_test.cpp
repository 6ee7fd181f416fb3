// The bearer token: read from its file, compared exactly.
#include <gtest/gtest.h>

#include "serve/auth.hpp"
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
