// docs/findings.md has exactly one section per rule id (the diagnosis rules, baton run's failure
// findings, the profile's findings), and every section is one.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>

#include "diagnose/rules.hpp"
#include "profile/profile_rules.hpp"
#include "run/failure_scan.hpp"
#include "test_support.hpp"

TEST(FindingsCatalogue, OneSectionPerRule) {
    std::ifstream in(baton::test::source_dir() + "/docs/findings.md");
    ASSERT_TRUE(in);
    std::set<std::string> sections;
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("## ", 0) == 0) sections.insert(line.substr(3));
    sections.erase("JSON output");
    sections.erase("Exit status");
    std::set<std::string> ids(baton::diagnose::rule_ids().begin(), baton::diagnose::rule_ids().end());
    ids.insert(baton::run::run_finding_ids().begin(), baton::run::run_finding_ids().end());  // baton run's own
    ids.insert(baton::profile::profile_rule_ids().begin(), baton::profile::profile_rule_ids().end());  // a trace's
    // The Python hook's checks (python/baton/checks.py): each `_finding("rule_id", ...`.
    std::ifstream py(baton::test::source_dir() + "/python/baton/checks.py");
    ASSERT_TRUE(py);
    const std::string source((std::istreambuf_iterator<char>(py)), std::istreambuf_iterator<char>());
    const std::regex call(R"re(_finding\(\s*"([a-z0-9_]+)")re");
    std::size_t python_ids = 0;
    for (auto it = std::sregex_iterator(source.begin(), source.end(), call); it != std::sregex_iterator(); ++it) {
        ids.insert((*it)[1]);
        ++python_ids;
    }
    EXPECT_EQ(python_ids, 10u);
    EXPECT_EQ(sections, ids);
}
