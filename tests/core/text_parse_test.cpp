#include "core/text_parse.hpp"

#include <gtest/gtest.h>

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

TEST(TextParse, ValueAfterKey) {
    EXPECT_EQ(value_after_key("Uid:\t1000\t1000", "Uid"), "1000\t1000");
    EXPECT_FALSE(value_after_key("Uidx: 1", "Uid").has_value());
    EXPECT_FALSE(value_after_key("Uid", "Uid").has_value());
}
