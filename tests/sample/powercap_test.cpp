// The CPU packages' energy from a fake sysfs tree: package domains found, their sub-domains and other
// zones ignored, wraps of the microjoule counter added up, and why nothing is read said.
#include "sample/linux/powercap.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

using baton::os::parse_counter;
using baton::os::PowercapReader;
using baton::test::TempDir;

TEST(Powercap, PackagesAreAddedUpAcrossWraps) {
    TempDir d;
    const std::string p0 = "class/powercap/intel-rapl:0/", p1 = "class/powercap/intel-rapl:1/";
    d.write(p0 + "name", "package-0\n");
    d.write(p0 + "max_energy_range_uj", "1000000\n");
    d.write(p0 + "energy_uj", "900000\n");
    d.write(p1 + "name", "package-1\n");
    d.write(p1 + "max_energy_range_uj", "262143328850\n");
    d.write(p1 + "energy_uj", "5000000\n");
    // Not packages: a sub-domain (its energy is inside the package's) and the psys zone.
    d.write("class/powercap/intel-rapl:0:0/name", "core\n");
    d.write("class/powercap/intel-rapl:0:0/energy_uj", "1\n");
    d.write("class/powercap/intel-rapl:2/name", "psys\n");
    d.write("class/powercap/intel-rapl:2/energy_uj", "77\n");
    PowercapReader r(d.path());
    auto first = r.read();
    ASSERT_TRUE(first);
    EXPECT_DOUBLE_EQ(*first, 0);  // since the first reading
    EXPECT_EQ(r.why_not(), "");
    d.write(p0 + "energy_uj", "100000\n");   // wrapped: 0.1 J to the top, 0.1 J after
    d.write(p1 + "energy_uj", "7500000\n");  // +2.5 J
    auto second = r.read();
    ASSERT_TRUE(second);
    EXPECT_NEAR(*second, 0.2 + 2.5, 1e-9);
}

TEST(Powercap, NoDomainOrAnUnreadableCounterSaysWhy) {
    TempDir d;
    PowercapReader none(d.path());
    EXPECT_FALSE(none.read());
    EXPECT_NE(none.why_not().find("no RAPL package domain under " + d.path() + "/class/powercap"), std::string::npos);
    d.write("class/powercap/intel-rapl:0/name", "package-0\n");
    d.write("class/powercap/intel-rapl:0/energy_uj/x", "");  // a directory where the counter should be
    PowercapReader broken(d.path());
    EXPECT_FALSE(broken.read());
    EXPECT_NE(broken.why_not().find("cannot read " + d.path() + "/class/powercap/intel-rapl:0/energy_uj"),
              std::string::npos)
        << broken.why_not();
}

TEST(Powercap, CounterTextIsParsedStrictly) {
    EXPECT_EQ(parse_counter("123\n"), 123u);
    EXPECT_FALSE(parse_counter("-1\n"));
    EXPECT_FALSE(parse_counter("12a"));
    EXPECT_FALSE(parse_counter(""));
    EXPECT_FALSE(parse_counter("99999999999999999999999"));
}
