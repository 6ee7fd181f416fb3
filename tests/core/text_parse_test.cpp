#include "core/text_parse.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>

using namespace baton::text;

TEST(TextParse, TakesNumbersAndAdvances) {
    std::string_view s = "  12 34x";
    EXPECT_EQ(take_u64(s), 12u);
    EXPECT_EQ(take_u64(s), 34u);
    EXPECT_EQ(s, "x");
    EXPECT_FALSE(take_u64(s).has_value());
    EXPECT_EQ(s, "x");  // unchanged on failure
}

TEST(TextParse, SignedAndDouble) {
    std::string_view s = "-1 0.25 7";
    EXPECT_EQ(take_i64(s), -1);
    EXPECT_DOUBLE_EQ(*take_double(s), 0.25);
    EXPECT_DOUBLE_EQ(*take_double(s), 7.0);
}

TEST(TextParse, OverflowIsRejected) {
    std::string_view s = "99999999999999999999999";
    EXPECT_FALSE(take_u64(s).has_value());
}

TEST(TextParse, WordsAndLines) {
    std::string_view s = "a\tb  c\nsecond line\n";
    std::string_view line = take_line(s);
    EXPECT_EQ(take_word(line), "a");
    EXPECT_EQ(take_word(line), "b");
    EXPECT_EQ(take_word(line), "c");
    EXPECT_EQ(take_word(line), "");
    EXPECT_EQ(take_line(s), "second line");
    EXPECT_TRUE(s.empty());
}

TEST(TextParse, WholeStringParse) {
    EXPECT_EQ(parse_u64("42\n"), 42u);
    EXPECT_EQ(parse_u64(" 42 "), 42u);
    EXPECT_FALSE(parse_u64("42x").has_value());
    EXPECT_FALSE(parse_u64("").has_value());
    EXPECT_FALSE(parse_u64("-1").has_value());
}

TEST(TextParse, ParseDigitsIsExactlyDigitsThatFit) {
    using baton::text::parse_digits;
    EXPECT_EQ(parse_digits<int>("0"), 0);
    EXPECT_EQ(parse_digits<int>("2147483647"), 2147483647);
    EXPECT_FALSE(parse_digits<int>("2147483648").has_value());  // overflow is refused, not wrapped
    EXPECT_EQ(parse_digits<std::uint64_t>("18446744073709551615"), 18446744073709551615ULL);
    EXPECT_FALSE(parse_digits<std::uint64_t>("18446744073709551616").has_value());
    EXPECT_EQ(parse_digits<std::int64_t>("0012"), 12);
    for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1\n", "1x", "x1", "1.5", "0x10", "-0"})
        EXPECT_FALSE(parse_digits<std::int64_t>(bad).has_value()) << bad;
    EXPECT_EQ(parse_digits<std::uint8_t>("255"), 255);
    EXPECT_FALSE(parse_digits<std::uint8_t>("256").has_value());
}

TEST(TextParse, ValueAfterKey) {
    EXPECT_EQ(value_after_key("Uid:\t1000\t1000", "Uid"), "1000\t1000");
    EXPECT_FALSE(value_after_key("Uidx: 1", "Uid").has_value());
    EXPECT_FALSE(value_after_key("Uid", "Uid").has_value());
}

#include "core/clock.hpp"

TEST(Clock, Rfc3339MatchesGmtime) {
    EXPECT_EQ(baton::rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
    EXPECT_EQ(baton::rfc3339_utc(951782400123), "2000-02-29T00:00:00.123Z");  // leap day
    EXPECT_EQ(baton::rfc3339_utc(1764446467089), "2025-11-29T20:01:07.089Z");
    EXPECT_EQ(baton::rfc3339_utc(-1), "1969-12-31T23:59:59.999Z");
    // Every day boundary for 150 years agrees with the C library.
    for (std::int64_t day = 0; day < 365 * 150; day += 1) {
        time_t t = static_cast<time_t>(day * 86400 + 3723);
        tm g{};
        gmtime_r(&t, &g);
        char expect[64];
        std::snprintf(expect, sizeof expect, "%04d-%02d-%02dT01:02:03.000Z", g.tm_year + 1900, g.tm_mon + 1, g.tm_mday);
        ASSERT_EQ(baton::rfc3339_utc(static_cast<std::int64_t>(t) * 1000), expect);
    }
}

TEST(TextParse, AsciiLowerLeavesOtherBytesAlone) {
    EXPECT_EQ(baton::text::ascii_lower("Memcpy HtoD (Pageable -> Device)"), "memcpy htod (pageable -> device)");
    EXPECT_EQ(baton::text::ascii_lower("\xc3\x89T\xe9"), "\xc3\x89t\xe9") << "UTF-8 and Latin-1 bytes as they are";
    EXPECT_EQ(baton::text::ascii_lower(""), "");
}
