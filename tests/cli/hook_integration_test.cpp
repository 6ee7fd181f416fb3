// The Python hook end to end: a real PyTorch training loop (tests/cli/hook_training.py, Debian's
// python3-torch on the CPU) under `baton run`, its steps reaching baton through BATON_EVENTS.
// A loop that waits for data gets input_bound from its measured data wait; the same loop fed
// from memory does not.
#include <gtest/gtest.h>

#include "test_support.hpp"

using namespace baton::test;

namespace {

CommandResult train(const TempDir& d, const std::string& mode, const std::string& seconds) {
    const std::string source = baton::test::source_dir();
    // A 4 s window: the step rules judge steps that span most of it, and the test has 8 s.
    d.write("baton.toml", "[thresholds]\nwindow_seconds = 4\n");
    return run(
        {baton_binary(), "--config", d.path() + "/baton.toml", "run", "--no-gpus", "--interval", "0.25", "--db",
         d.path() + "/baton.db", "--", "/usr/bin/python3", source + "/tests/cli/hook_training.py", mode, seconds},
        {{"PYTHONPATH", source + "/python"}}, 120);
}

}  // namespace

TEST(Hook, SlowDatasetIsInputBoundByItsMeasuredDataWait) {
    TempDir d;
    auto r = train(d, "slow", "8");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("slow: "), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find("not running under `baton run`"), std::string::npos) << r.err;  // the hook found baton
    // The summary's step line, and the finding judged from the steps (not from CPU or GPU figures).
    EXPECT_NE(r.err.find("  steps (baton hook): "), std::string::npos) << r.err;
    // The trainer is the job's own process: subject "job", the same in every run (compare matches it).
    EXPECT_NE(r.err.find("warning input_bound [job]"), std::string::npos) << r.err;
    // A run on the CPU is not told to pin memory (pinning is for copies to a GPU).
    EXPECT_EQ(r.err.find("pin_memory"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("waits for data"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("measured by the baton hook"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("loads every batch itself (num_workers=0)"), std::string::npos) << r.err;
    // The steps are in the history with the run.
    auto md = run({baton_binary(), "report", "1", "--db", d.path() + "/baton.db", "--markdown"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("`input_bound` [job]"), std::string::npos) << md.out;
}

TEST(Hook, DataFromMemoryIsNotInputBound) {
    TempDir d;
    auto r = train(d, "fast", "8");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("  steps (baton hook): "), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("input_bound"), std::string::npos) << r.err;
}

TEST(Hook, CheckFindingsJoinTheRun) {
    TempDir d;
    const std::string source = baton::test::source_dir();
    const std::string script =
        "import torch, baton.torch\n"
        "from torch.utils.data import DataLoader\n"
        "baton.torch.check(loader=DataLoader(list(range(8))))\n";
    auto r = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--db", d.path() + "/baton.db", "--",
                  "/usr/bin/python3", "-c", script},
                 {{"PYTHONPATH", source + "/python"}}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Printed once by the hook while it ran, then in baton's summary with its fix.
    EXPECT_NE(r.err.find("baton: warning loader_num_workers_zero [loader]:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("  warning loader_num_workers_zero [loader]: the DataLoader loads every batch"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("see: baton explain loader_num_workers_zero"), std::string::npos) << r.err;
    auto show = run({baton_binary(), "runs", "show", "1", "--db", d.path() + "/baton.db"});
    EXPECT_NE(show.out.find("warning loader_num_workers_zero [loader]"), std::string::npos) << show.out;
}
