// gzip in memory: what goes in comes out, cut or foreign streams and bombs are refused.
#include <gtest/gtest.h>

#include <string>

#include "core/gzip.hpp"

using namespace baton;

TEST(Gzip, RoundTripsAndRefusesWhatIsNotAWholeStream) {
    std::string text;
    for (int i = 0; i < 100000; ++i) text += std::to_string(i * 7919 % 1000) + ",";
    const std::string packed = gzip_compress(text);
    ASSERT_FALSE(packed.empty());
    EXPECT_LT(packed.size(), text.size());
    EXPECT_EQ(gzip_decompress(packed, text.size()), text);
    EXPECT_EQ(gzip_decompress(gzip_compress(""), 10), "");
    // One byte short of its trailer, a stream cut in half, not gzip at all, larger than allowed.
    EXPECT_FALSE(gzip_decompress(packed.substr(0, packed.size() - 1), text.size()).has_value());
    EXPECT_FALSE(gzip_decompress(packed.substr(0, packed.size() / 2), text.size()).has_value());
    EXPECT_FALSE(gzip_decompress("hello, world", 100).has_value());
    EXPECT_FALSE(gzip_decompress("", 100).has_value());
    EXPECT_FALSE(gzip_decompress(packed, text.size() - 1).has_value());
}
