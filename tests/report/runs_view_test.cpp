// baton runs' views on made-up records: the list's columns (a running run has no duration or
// exit), one run's record with its findings, and what prune says it did.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/runs_view.hpp"

using namespace baton;
using namespace baton::report;

TEST(RunsView, ListShowAndPrune) {
    store::RunRecord done;
    done.id = 3;
    done.name = "resnet";
    done.kind = store::RunKind::run;
    done.state = store::RunState::finished;
    done.start_ms = 1764586200000;  // 2025-12-01T10:50:00Z
    done.end_ms = done.start_ms + 90500;
    done.exit_status = 0;
    done.samples = 90;
    done.command = "python3 train.py";
    done.summary = "SUMMARY\n";
    store::RunRecord running = done;
    running.id = 4;
    running.state = store::RunState::running;
    running.end_ms.reset();
    running.exit_status.reset();
    const std::string t = runs_table({done, running});
    EXPECT_EQ(t,
              "  ID  KIND   STATE        STARTED (UTC)          DURATION  EXIT  SAMPLES  FINDINGS  NAME\n"
              "   3  run    finished     2025-12-01T10:50:00      90.5 s     0       90         0  resnet\n"
              "   4  run    running      2025-12-01T10:50:00           -     -       90         0  resnet\n");
    const std::string jsonl = runs_jsonl({done, running});
    EXPECT_EQ(std::count(jsonl.begin(), jsonl.end(), '\n'), 2);
    EXPECT_EQ(nlohmann::json::parse(jsonl.substr(0, jsonl.find('\n')))["id"], 3);

    store::RecordedFinding f;
    f.t_ms = done.start_ms + 30000;
    f.severity = "warning";
    f.rule = "input_bound";
    f.subject = "job";
    f.summary = "the GPU waits for data";
    const std::string shown = run_text(done, {f});
    EXPECT_NE(shown.find("command: python3 train.py\n"), std::string::npos);
    EXPECT_NE(shown.find("10:50:30 warning input_bound [job]: the GPU waits for data\n"), std::string::npos) << shown;
    EXPECT_NE(shown.find("\nSUMMARY\n"), std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(run_json(done, {f}))["id"], 3);

    EXPECT_EQ(prune_text({{done}, true, 0, ""}), "would prune 1 run: 3\n");
    EXPECT_EQ(prune_text({{}, false, 0, ""}), "pruned 0 runs\n");
    EXPECT_EQ(prune_text({{done, running}, false, 4096, "database is locked"}),
              "pruned 2 runs: 3 4, 4.0 KiB freed\nspace not given back: database is locked\n");
    const nlohmann::json j = nlohmann::json::parse(prune_json({{done}, false, 4096, ""}));
    EXPECT_EQ(j["runs"], nlohmann::json::array({3}));
    EXPECT_EQ(j["bytes_freed"], 4096);
    EXPECT_FALSE(nlohmann::json::parse(prune_json({{done}, true, 0, ""})).contains("bytes_freed"));
}
