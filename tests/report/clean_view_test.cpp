// baton clean's views and tallies over made-up leftovers and ends: the table's columns and its
// lines under each row, the line per outcome, the JSON object, and what counts as done.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/clean_view.hpp"

using namespace baton;
using namespace baton::report;

namespace {

std::vector<clean::Leftover> two_leftovers() {
    clean::Leftover orphan;
    orphan.kind = clean::LeftoverKind::gpu_orphan;
    orphan.pid = 4242;
    orphan.ppid = 1;
    orphan.uid = 1000;
    orphan.user = "averyveryverylongname";
    orphan.name = "python3";
    orphan.command = "python3 train.py --config configs/a-very-long-name-of-an-...riment.yaml --seed 1";
    orphan.age_seconds = 3 * 3600;
    orphan.gpu_memory_bytes = std::uint64_t{3} << 30;
    orphan.gpus = {0, 2};
    orphan.reason = "holds GPU 0, 2; its launcher ended";
    orphan.endable = true;
    orphan.start_ticks = 99;
    clean::Leftover zombie;
    zombie.kind = clean::LeftoverKind::defunct;
    zombie.pid = 77;
    zombie.user = "root";
    zombie.name = "pt_data_worker";
    zombie.age_seconds = 90;
    zombie.reason = "defunct";
    zombie.left_alone = "a defunct process ends when its parent waits for it";
    return {orphan, zombie};
}

}  // namespace

TEST(CleanView, TableWithTheReasonUnderEachRow) {
    const std::string t = leftovers_table(two_leftovers());
    EXPECT_NE(t.find("     PID USER         AGE   GPU MEM KIND"), std::string::npos) << t;
    EXPECT_NE(t.find("    4242 averyveryv    3h   3.0 GiB gpu_orphan"), std::string::npos) << t;
    EXPECT_NE(t.find("python3 train.py --config configs/a-very-long-name-of-an-..."), std::string::npos) << t;
    EXPECT_NE(t.find("         holds GPU 0, 2; its launcher ended\n"), std::string::npos);
    // No command line (a zombie's is empty): its name in brackets; no GPU memory: "-".
    EXPECT_NE(t.find("      77 root         90s         - defunct        [pt_data_worker]"), std::string::npos) << t;
    EXPECT_NE(t.find("         left alone: a defunct process ends when its parent waits for it\n"), std::string::npos);
}

TEST(CleanView, EndsAreTalliedAndSaidOneLineEach) {
    std::vector<clean::EndResult> ended = {{1, clean::EndOutcome::ended, "", 1u << 30},
                                           {2, clean::EndOutcome::killed, "", 1u << 30},
                                           {3, clean::EndOutcome::gone_before, "", 0},
                                           {4, clean::EndOutcome::reused, "", 8u << 30}};
    clean::EndTally t = tally_ends(ended);
    EXPECT_EQ(t.gpu_memory_freed_bytes, std::uint64_t{2} << 30);  // a reused pid's memory is not ours
    EXPECT_TRUE(t.all_done);
    const std::string lines = end_lines(ended, 5, t);
    EXPECT_EQ(lines,
              "pid 1: ended (SIGTERM)\n"
              "pid 2: killed (SIGKILL after 5 s)\n"
              "pid 3: had ended already\n"
              "pid 4: now names another process (started after the listing): left alone\n"
              "GPU memory freed: 2.0 GiB\n");
    ended.push_back({5, clean::EndOutcome::refused, "Operation not permitted", 0});
    ended.push_back({6, clean::EndOutcome::survived, "", 0});
    t = clean::tally_ends(ended);
    EXPECT_FALSE(t.all_done);
    const std::string more = end_lines(ended, 5, t);
    EXPECT_NE(more.find("pid 5: not signalled: Operation not permitted\n"), std::string::npos);
    EXPECT_NE(more.find("pid 6: still there after SIGKILL (waiting in the kernel, state D?)\n"), std::string::npos);
    EXPECT_EQ(end_lines({}, 5, clean::tally_ends({})), "GPU memory freed: none (none of them held any)\n");
}

TEST(CleanView, JsonAndTheEndableTargets) {
    const std::vector<clean::Leftover> list = two_leftovers();
    const std::vector<clean::EndTarget> targets = clean::end_targets(list);
    ASSERT_EQ(targets.size(), 1u);  // the zombie is not endable
    EXPECT_EQ(targets[0].pid, 4242u);
    EXPECT_EQ(targets[0].start_ticks, 99u);
    const std::vector<clean::EndResult> ended = {{4242, clean::EndOutcome::refused, "Operation not permitted", 0}};
    const nlohmann::json j = nlohmann::json::parse(clean_json(list, ended, false, clean::tally_ends(ended)));
    EXPECT_EQ(j["dry_run"], false);
    ASSERT_EQ(j["leftovers"].size(), 2u);
    EXPECT_EQ(j["leftovers"][0]["kind"], "gpu_orphan");
    EXPECT_EQ(j["leftovers"][0]["gpus"], nlohmann::json::array({0, 2}));
    EXPECT_FALSE(j["leftovers"][0].contains("left_alone"));
    EXPECT_EQ(j["leftovers"][1]["left_alone"], "a defunct process ends when its parent waits for it");
    EXPECT_EQ(j["ended"][0]["outcome"], "refused");
    EXPECT_EQ(j["ended"][0]["error"], "Operation not permitted");
    EXPECT_EQ(j["gpu_memory_freed_bytes"], 0);
}
