// [queue] idle_policy's clock: a job is judged once when all its GPUs sat at 0 % for the time given;
// a paused job, a job without GPUs, a GPU not read, or one second of work never count as idle.
#include <gtest/gtest.h>

#include "queue/idle_policy.hpp"

using namespace baton::queue;

namespace {

IdleJob job(std::int64_t id, std::vector<std::pair<unsigned, std::optional<double>>> gpus, bool paused = false) {
    IdleJob j;
    j.id = id;
    j.gpus = std::move(gpus);
    j.paused = paused;
    return j;
}

}  // namespace

TEST(IdlePolicy, NamesRoundTrip) {
    for (IdlePolicy p : {IdlePolicy::off, IdlePolicy::warn, IdlePolicy::requeue, IdlePolicy::cancel})
        EXPECT_EQ(idle_policy_from_name(idle_policy_name(p)), p);
    EXPECT_FALSE(idle_policy_from_name("kill").has_value());
}

TEST(IdlePolicy, AJobIdleForTheWholeTimeIsJudgedOnce) {
    IdleWatch w;
    const double minutes = 2;
    std::vector<std::pair<std::int64_t, std::string>> judged;
    for (int s = 0; s <= 200; ++s) {
        const std::vector<IdleJob> jobs = {
            job(1, {{0, 0.0}, {3, 0.0}}),         // idle throughout
            job(2, {{1, s == 90 ? 35.0 : 0.0}}),  // one busy second at 90 s: its clock starts over
            job(3, {{2, 0.0}}, true),             // paused: idle on purpose
            job(4, {}),                           // no GPUs
            job(5, {{4, std::nullopt}}),          // its GPU not read
            job(6, {{5, 0.0}, {6, 12.0}}),        // one of its GPUs works
        };
        for (auto& j : w.judge(jobs, 1000.0 + s, minutes)) {
            judged.push_back(j);
            EXPECT_EQ(s, 120) << "job " << j.first;
        }
    }
    ASSERT_EQ(judged.size(), 1u);
    EXPECT_EQ(judged[0].first, 1);
    EXPECT_EQ(judged[0].second, "its GPUs 0,3 were at 0 % for 2m00s");
    // Job 2, idle again from 91 s: not at 210 s, at 211 s.
    EXPECT_TRUE(w.judge({job(2, {{1, 0.0}})}, 1000.0 + 210, minutes).empty());
    std::vector<std::pair<std::int64_t, std::string>> later = w.judge({job(2, {{1, 0.0}})}, 1000.0 + 211, minutes);
    ASSERT_EQ(later.size(), 1u);
    EXPECT_EQ(later[0].second, "its GPU 1 was at 0 % for 2m00s");
    // A job that ended and a new one with its id (a retry) starts over.
    EXPECT_TRUE(w.judge({}, 1300, minutes).empty());
    EXPECT_TRUE(w.judge({job(2, {{1, 0.0}})}, 1301, minutes).empty());
}
