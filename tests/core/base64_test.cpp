// Base64 as RFC 4648 writes it: every byte survives, hostile text is refused (the queue's socket and
// jobstats' JS1 summaries both rely on it).
#include <gtest/gtest.h>

#include <string>

#include "core/base64.hpp"

using namespace baton;

TEST(Base64, RoundTripsEveryByte) {
    std::string all;
    for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
    for (std::size_t n = 0; n <= all.size(); n += 37) {
        const std::string part = all.substr(0, n);
        EXPECT_EQ(base64_decode(base64_encode(part)), part) << n;
    }
    EXPECT_EQ(base64_encode("hello"), "aGVsbG8=");
    EXPECT_EQ(base64_decode("aGVsbG8="), "hello");
    for (const char* bad : {"a", "aGVsbG8", "aGV=bG8=", "====", "aGVsbG8*", "aG=sbG8="})
        EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
}
