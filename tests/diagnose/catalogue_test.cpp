// docs/findings.md has exactly one section per rule id (the diagnosis rules and baton run's
// failure findings), and every section is one.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "diagnose/rules.hpp"
#include "run/failure_scan.hpp"

TEST(FindingsCatalogue, OneSectionPerRule) {
    std::ifstream in(std::string(BATON_SOURCE_DIR) + "/docs/findings.md");
    ASSERT_TRUE(in);
    std::set<std::string> sections;
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("## ", 0) == 0) sections.insert(line.substr(3));
    sections.erase("JSON output");
    sections.erase("Exit status");
    std::set<std::string> ids(baton::rule_ids().begin(), baton::rule_ids().end());
    ids.insert(baton::run_finding_ids().begin(), baton::run_finding_ids().end());  // baton run's own
    EXPECT_EQ(sections, ids);
}
