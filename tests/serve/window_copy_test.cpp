// The agent judges a window of trimmed snapshots (serve/agent.hpp, window_copy): every recorded and
// generated scenario of the diagnosis corpus gives the same findings, word for word, either way.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "diagnose/rules.hpp"
#include "serve/agent.hpp"
#include "store/snapshot_json_read.hpp"

using namespace baton;

TEST(WindowCopy, FindingsAreTheSameWithoutCommandLinesAndCgroups) {
    int scenarios = 0;
    for (const auto& entry : std::filesystem::directory_iterator(std::string(BATON_SOURCE_DIR) + "/tests/scenarios")) {
        if (entry.path().extension() != ".jsonl") continue;
        std::ifstream in(entry.path());
        std::vector<Snapshot> full, trimmed;
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            Result<Snapshot> s = parse_snapshot_json(line);
            ASSERT_TRUE(s.ok()) << entry.path() << ": " << s.error().message;
            trimmed.push_back(serve::window_copy(*s));
            full.push_back(std::move(*s));
        }
        const std::vector<Finding> a = diagnose(full, Thresholds{}), b = diagnose(trimmed, Thresholds{});
        ASSERT_EQ(a.size(), b.size()) << entry.path();
        for (std::size_t i = 0; i < a.size(); ++i) {
            EXPECT_EQ(a[i].rule, b[i].rule) << entry.path();
            EXPECT_EQ(a[i].subject, b[i].subject) << entry.path();
            EXPECT_EQ(a[i].summary, b[i].summary) << entry.path();
            EXPECT_EQ(a[i].recommendation, b[i].recommendation) << entry.path();
        }
        ++scenarios;
    }
    EXPECT_GT(scenarios, 10);
}
