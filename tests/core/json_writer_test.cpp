#include "core/json_writer.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using baton::JsonWriter;

TEST(JsonWriter, WritesNestedStructures) {
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    w.field("a", 1);
    w.key("b");
    w.begin_array();
    w.value("x");
    w.value(true);
    w.null();
    w.end_array();
    w.optional_field("absent", std::optional<int>{});
    w.optional_field("present", std::optional<double>{2.5});
    w.end_object();
    w.finish();
    EXPECT_EQ(out, R"({"a":1,"b":["x",true,null],"present":2.5})");
}

TEST(JsonWriter, EscapesControlCharactersAndQuotes) {
    std::string out;
    JsonWriter::append_escaped(out, std::string("a\"b\\c\n\t\x01\x7f", 9));
    EXPECT_EQ(out, R"("a\"b\\c\n\t\u0001\u007f")");
    EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(), std::string("a\"b\\c\n\t\x01\x7f", 9));
}

TEST(JsonWriter, InvalidUtf8BecomesReplacementCharacter) {
    std::string out;
    // A lone continuation byte, a truncated sequence, an overlong encoding, then valid UTF-8.
    JsonWriter::append_escaped(out, "\x80 \xE2\x82 \xC0\xAF \xE2\x82\xAC");
    auto parsed = nlohmann::json::parse(out).get<std::string>();
    EXPECT_EQ(parsed, "\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD \xE2\x82\xAC");
}

TEST(JsonWriter, NonFiniteIsNull) {
    std::string out;
    JsonWriter w(out);
    w.begin_array();
    w.value(std::nan(""));
    w.value(INFINITY);
    w.value(0.1234567);
    w.value(12.0);
    w.end_array();
    w.finish();
    EXPECT_EQ(out, "[null,null,0.123,12]");
}

TEST(JsonWriter, LargeIntegersAreExact) {
    std::string out;
    JsonWriter w(out);
    w.value(std::uint64_t{18446744073709551615ULL});
    w.finish();
    EXPECT_EQ(out, "18446744073709551615");
}

TEST(JsonWriter, LongOutputGrowsAndTrims) {
    std::string out = "prefix:";
    {
        JsonWriter w(out);
        w.begin_array();
        for (int i = 0; i < 100000; ++i) w.value(std::string_view("x\"y"));
        w.end_array();
    }
    EXPECT_EQ(out.size(), 7u + 2 + 100000 * 6 + 99999);
    EXPECT_EQ(out.substr(0, 14), "prefix:[\"x\\\"y\"");
    auto parsed = nlohmann::json::parse(out.substr(7));
    EXPECT_EQ(parsed.size(), 100000u);
}

TEST(JsonWriter, TextAppendedAfterFinishSurvivesTheWriter) {
    std::string out;
    {
        baton::JsonWriter w(out);
        w.begin_object();
        w.field("a", 1);
        w.end_object();
        w.finish();
        out.push_back('\n');  // JSON Lines: the newline after the object
    }
    EXPECT_EQ(out, "{\"a\":1}\n");
    {
        baton::JsonWriter w(out);  // a second line through a new writer
        w.begin_object();
        w.end_object();
    }
    EXPECT_EQ(out, "{\"a\":1}\n{}");
}
