// docs/findings.md has exactly one section per rule id, and every section is a rule.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "diagnose/rules.hpp"

TEST(FindingsCatalogue, OneSectionPerRule) {
    std::ifstream in(std::string(BATON_SOURCE_DIR) + "/docs/findings.md");
    ASSERT_TRUE(in);
    std::set<std::string> sections;
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("## ", 0) == 0) sections.insert(line.substr(3));
    sections.erase("JSON output");
    sections.erase("Exit status");
    const std::set<std::string> ids(baton::rule_ids().begin(), baton::rule_ids().end());
    EXPECT_EQ(sections, ids);
}
