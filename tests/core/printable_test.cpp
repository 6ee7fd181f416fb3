// The one place where text from outside is made safe: UTF-8 validation against an independent
// decoder (every 1-3 byte sequence, and every 4-byte lead with its second byte), printable views,
// one-line error messages, and the JSON encoder round-tripping anything through a strict parser.
#include "core/printable.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <random>

#include "core/json_writer.hpp"

using namespace baton;

namespace {

// A decoder written the other way round: decode the bits, then judge the code point (range,
// shortest form, not a surrogate). Returns the length or 0.
std::size_t reference_length(const std::string& s) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (b(0) < 0x80) return 1;
    if ((b(0) & 0xE0) == 0xC0)
        n = 2, cp = b(0) & 0x1F;
    else if ((b(0) & 0xF0) == 0xE0)
        n = 3, cp = b(0) & 0x0F;
    else if ((b(0) & 0xF8) == 0xF0)
        n = 4, cp = b(0) & 0x07;
    else
        return 0;
    if (s.size() < n) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        if ((b(k) & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (b(k) & 0x3F);
    }
    const std::uint32_t shortest = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    if (cp < shortest || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

void expect_same(const std::string& s) {
    ASSERT_EQ(utf8_sequence_length(s, 0), reference_length(s))
        << std::hex << int(static_cast<unsigned char>(s[0])) << " " << s.size();
}

}  // namespace

TEST(Printable, Utf8ValidationMatchesAnIndependentDecoder) {
    for (int a = 0; a < 256; ++a) {
        expect_same(std::string(1, static_cast<char>(a)));
        for (int b = 0; b < 256; ++b) {
            const std::string two{static_cast<char>(a), static_cast<char>(b)};
            expect_same(two);
            if (a >= 0xE0)
                for (int c = 0; c < 256; ++c) expect_same(two + static_cast<char>(c));
            if (a >= 0xF0)
                for (int c : {0x80, 0xBF, 0x41})
                    for (int d : {0x80, 0xBF, 0x41}) expect_same(two + static_cast<char>(c) + static_cast<char>(d));
        }
    }
}

TEST(Printable, ControlsAndInvalidBytesBecomeQuestionMarks) {
    EXPECT_EQ(printable("\x1b]2;PWNED\x07\x1b[2J"), "?]2;PWNED??[2J");
    EXPECT_EQ(printable("a\nb\tc\r\x7f"), "a?b?c??");
    EXPECT_EQ(printable("\xc2\x9b"
                        "31m"),
              "?31m");                                      // C1 CSI: one character, one '?'
    EXPECT_EQ(printable("\xfb\x88\xa5"), "???");            // F5-FF lead
    EXPECT_EQ(printable("\xc0\xaf\xed\xa0\x80"), "?????");  // overlong, surrogate
    EXPECT_EQ(printable("\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x94\xa5 \xc2\xa0"),
              "\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x94\xa5 \xc2\xa0");
    EXPECT_EQ(printable("\xe4\xbd"), "??");  // truncated
    EXPECT_EQ(printable_text("line 1\n\tline\x1b[2J 2\n"), "line 1\n\tline?[2J 2\n");
}

TEST(Printable, ShellWordsAreReadBackByteForByte) {
    EXPECT_EQ(sh_quoted(""), "''");
    EXPECT_EQ(sh_quoted("it's"), "'it'\\''s'");
    const std::string hostile = std::string("a $(rm -rf /) `x` \"q\" \\ \n\xff end");
    baton::test::CommandResult r = baton::test::run({"/bin/sh", "-c", "printf '%s' " + sh_quoted(hostile)});
    EXPECT_EQ(r.out, hostile);
}

// A word for a command printed line by line: one line, and bash reads it back byte for byte.
TEST(Printable, ShellWordsOnOneLineForAPastedCommand) {
    EXPECT_EQ(sh_quoted_line("/data"), "'/data'");
    EXPECT_EQ(sh_quoted_line("/mnt/my data"), "'/mnt/my data'");
    EXPECT_EQ(sh_quoted_line("/mnt/a\nb"), "$'/mnt/a\\nb'");
    for (const std::string& hostile :
         {std::string("/mnt/x\ny z"), std::string("it's\t\\\r\x01\x7f$(id)`id`\xff"), std::string("/mnt/'\n'")}) {
        const std::string q = sh_quoted_line(hostile);
        EXPECT_EQ(q.find('\n'), std::string::npos) << q;
        baton::test::CommandResult r = baton::test::run({"/bin/bash", "-c", "printf '%s' " + q});
        EXPECT_EQ(r.out, hostile) << q;
    }
}

TEST(Printable, ErrorMessagesStayOnOneLine) {
    EXPECT_EQ(escaped_line("saw 'tr\nue'"), "saw 'tr\\nue'");
    EXPECT_EQ(escaped_line("\x1b[2J\t\r\x7f\xc2\x9b\xff"), "\\x1b[2J\\t\\r\\x7f\\xc2\\x9b\\xff");
    EXPECT_EQ(escaped_line("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(Printable, JsonEncoderOutputIsAlwaysStrictUtf8) {
    // Random bytes, biased to the edges of UTF-8, through the encoder and back through a strict
    // parser: always accepted; valid text comes back unchanged.
    std::mt19937 rng(12345);
    const unsigned char edges[] = {0x00, 0x1b, 0x7f, 0x80, 0x9b, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef,
                                   0xf0, 0xf4, 0xf5, 0xf8, 0xfb, 0xfe, 0xff, 0xa0, 0x8f, 0x90, '"',  '\\', 'a'};
    for (int i = 0; i < 20000; ++i) {
        std::string s;
        const int n = static_cast<int>(rng() % 12);
        for (int k = 0; k < n; ++k)
            s.push_back(static_cast<char>(rng() % 2 ? edges[rng() % sizeof edges] : rng() % 256));
        std::string out;
        JsonWriter::append_escaped(out, s);
        ASSERT_TRUE(nlohmann::json::accept(out)) << out;
        bool valid = true;
        for (std::size_t at = 0; at < s.size() && valid;) {
            const std::size_t len = utf8_sequence_length(s, at);
            valid = len > 0;
            at += len;
        }
        for (char c : out) ASSERT_FALSE(static_cast<unsigned char>(c) < 0x20) << out;
        if (valid) {
            EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(), s);
        }
    }
}
