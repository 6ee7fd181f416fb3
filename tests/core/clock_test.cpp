// RFC 3339 formatting and parsing: round trips, offsets, and malformed text.
#include <gtest/gtest.h>

#include "core/clock.hpp"

using namespace baton;

TEST(Clock, FormatAndParseRoundTrip) {
    for (std::int64_t ms : {0LL, 1764448867123LL, 951782400000LL /* 2000-02-29 */, 4102444799999LL, -86400000LL})
        EXPECT_EQ(parse_rfc3339(rfc3339_utc(ms)), ms) << rfc3339_utc(ms);
    EXPECT_EQ(rfc3339_utc(1764448867123), "2025-11-29T20:41:07.123Z");
}

TEST(Clock, ParsesOffsetsAndFractions) {
    EXPECT_EQ(parse_rfc3339("2025-11-29T20:41:07Z"), 1764448867000);
    EXPECT_EQ(parse_rfc3339("2025-11-29T21:41:07.5+01:00"), 1764448867500);
    EXPECT_EQ(parse_rfc3339("2025-11-29T19:41:07.123456-01:00"), 1764448867123);
    EXPECT_EQ(parse_rfc3339("2025-11-29 20:41:07z"), 1764448867000);
}

TEST(Clock, RejectsMalformedTimes) {
    for (const char* bad : {"", "2025", "2025-11-29", "2025-11-29T20:41:07", "2025-13-01T00:00:00Z",
                            "2025-11-29T24:00:00Z", "2025-11-29T20:41:07.Z", "2025-11-29T20:41:07+0100",
                            "2025-11-29T20:41:07Zjunk", "2025/11/29T20:41:07Z", "abcd-ef-ghTij:kl:mnZ"})
        EXPECT_FALSE(parse_rfc3339(bad).has_value()) << bad;
}
