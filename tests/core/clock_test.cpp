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

TEST(Clock, DurationsInEveryFormTheFlagsTake) {
    using baton::parse_duration;
    const std::pair<const char*, double> good[] = {
        {"90", 90},       {"0.5", 0.5},   {"90s", 90},       {"1m30s", 90},    {"5min", 300}, {"2h", 7200},
        {"30d", 2592000}, {"1.5h", 5400}, {"250ms", 0.25},   {"1h2m3s", 3723}, {"2hr", 7200}, {"10sec", 10},
        {"0", 0},         {"0s", 0},      {"1d12h", 129600}, {"30s1m", 90},    {".5", 0.5},
    };
    for (const auto& [text, seconds] : good) {
        const std::optional<double> d = parse_duration(text);
        ASSERT_TRUE(d.has_value()) << text;
        EXPECT_DOUBLE_EQ(*d, seconds) << text;
    }
    for (const char* bad : {"", "s", "m30", "1m30", "-5", "+5", "5 s", " 5", "5s ", "1e3", "inf", "nan", "5x", "1..5",
                            ".", "5mins", "1.2.3s",
                            "99999999999999999999999999999999999999999999999999999"
                            "99999999999999999999999999999999999999999999999999999"
                            "99999999999999999999999999999999999999999999999999999"
                            "99999999999999999999999999999999999999999999999999999"
                            "99999999999999999999999999999999999999999999999999999"
                            "99999999999999999999999999999999999999999999999999999"
                            "9999d"})
        EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
}

TEST(SampleSchedule, TheSecondSampleIsAFullIntervalAfterTheFirstEnded) {
    SampleSchedule s(0.1);
    EXPECT_EQ(s.next(), 0);  // the first: at once
    s.taken(50.3);           // the first take ended (after its priming read)
    EXPECT_DOUBLE_EQ(s.next(), 50.4);
    s.taken(50.401);
    EXPECT_DOUBLE_EQ(s.next(), 50.5);  // steady: from when it was due, not when it ended
    s.taken(51.2);                     // a slow tick: no burst of catch-up samples
    EXPECT_DOUBLE_EQ(s.next(), 51.2);
}

TEST(Clock, LocalTimeTextIsTheTimeZonesWallClock) {
    setenv("TZ", "UTC", 1);
    tzset();
    EXPECT_EQ(baton::local_time_text(1764771730123, "%H:%M:%S"), "14:22:10");
    EXPECT_EQ(baton::local_time_text(1764771730123, "%Y%m%d-%H%M%S"), "20251203-142210");
    EXPECT_EQ(baton::local_time_text(0, ""), "");
}
