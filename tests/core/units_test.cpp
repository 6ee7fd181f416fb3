// Sizes and rates as users type them (hostile ones too), and as baton prints them.
#include <gtest/gtest.h>

#include "core/units.hpp"

using namespace baton;

TEST(Units, RatesAreDecimalUnlessBinary) {
    EXPECT_DOUBLE_EQ(*parse_rate("2GB/s"), 2e9);
    EXPECT_DOUBLE_EQ(*parse_rate("500MB/s"), 500e6);
    EXPECT_DOUBLE_EQ(*parse_rate(" 1.5G "), 1.5e9);
    EXPECT_DOUBLE_EQ(*parse_rate("2GiB/s"), 2.0 * 1024 * 1024 * 1024);
    EXPECT_DOUBLE_EQ(*parse_rate("800kB/s"), 800e3);
    EXPECT_DOUBLE_EQ(*parse_rate("4096"), 4096);
    for (const char* bad : {"", "/s", "GB/s", "-1GB/s", "0", "2 GB/s", "2GB/h", "2Gb/sx", "1e9", "nan", "2XB/s",
                            "9999999999999999999999PB/s", "."})
        EXPECT_FALSE(parse_rate(bad).has_value()) << bad;
    // A number past a double's range is refused, not thrown (found by fuzz_bench_inputs).
    EXPECT_FALSE(parse_rate(std::string(400, '5')).has_value());
    EXPECT_FALSE(parse_size(std::string(400, '5') + "G").has_value());
}

TEST(Units, RatesAndSizesForPeople) {
    EXPECT_EQ(format_rate(54.8e9), "54.8 GB/s");
    EXPECT_EQ(format_rate(912e6), "912 MB/s");
    EXPECT_EQ(format_rate(1.234e9), "1.23 GB/s");
    EXPECT_EQ(format_rate(800), "800 B/s");
    EXPECT_EQ(format_rate(999.7e6), "1.00 GB/s");
    EXPECT_EQ(format_size(4096), "4 KiB");
    EXPECT_EQ(format_size(1u << 30), "1 GiB");
    EXPECT_EQ(format_size(512), "512 B");
    EXPECT_EQ(format_size(1536u << 20), "1.5 GiB");
    EXPECT_EQ(format_size(3390242406ull), "3.2 GiB");
    EXPECT_EQ(format_size(1023), "1023 B");
}

TEST(Units, ElapsedTimesInTwoUnits) {
    EXPECT_EQ(format_elapsed(0), "0s");
    EXPECT_EQ(format_elapsed(-5), "0s");
    EXPECT_EQ(format_elapsed(59), "59s");
    EXPECT_EQ(format_elapsed(60), "1m00s");
    EXPECT_EQ(format_elapsed(3599), "59m59s");
    EXPECT_EQ(format_elapsed(3600 + 2 * 60 + 59), "1h02m");
    EXPECT_EQ(format_elapsed(2 * 86400 + 3 * 3600), "2d03h");
}

TEST(Units, GibIsAlwaysGibWithItsDecimals) {
    EXPECT_EQ(format_gib(30.0 * (1ull << 30)), "30.0 GiB");
    EXPECT_EQ(format_gib(512.0 * (1 << 20)), "0.5 GiB");
    EXPECT_EQ(format_gib(80.0 * (1ull << 30), 0), "80 GiB");
    EXPECT_EQ(format_gib(1.25 * (1ull << 30), 2), "1.25 GiB");
    EXPECT_EQ(format_gib(0), "0.0 GiB");
}
