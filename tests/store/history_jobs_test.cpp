// The job queue's table in the history database: jobs round-trip byte for byte (arguments need not
// be UTF-8), every state change is guarded by the state the job must be in, and two writers racing
// to start the same jobs never both start one.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "store/history.hpp"
#include "store/history_jobs.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::store;

namespace {

JobRecord a_job(const std::string& name) {
    JobRecord j;
    j.owner_uid = 1000;
    j.name = name;
    j.argv = {"python3",    "train.py", "", "--lr=1e-3 with spaces", "quote\"s and 'single'", "\xff\xfe not UTF-8",
              "line\nbreak"};
    j.cwd = "/home/me/project";
    j.env = {{"PATH", "/usr/bin:/bin"}, {"EQUALS", "a=b=c"}, {"EMPTY", ""}};
    j.request = R"({"gpus":2,"cpus":8})";
    j.priority = 3;
    j.after = {7, 9};
    j.after_ok = true;
    j.submit_ms = 1'800'000'000'000;
    return j;
}

}  // namespace

TEST(HistoryJobs, JobsRoundTripAndSurviveAReopen) {
    test::TempDir d;
    const std::string path = d.path() + "/h.db";
    std::int64_t id = 0;
    {
        auto h = History::open(path);
        ASSERT_TRUE(h.ok()) << h.error().message;
        auto added = h->queue_jobs().add_job(a_job("résumé ✓"));
        ASSERT_TRUE(added.ok()) << added.error().message;
        id = *added;
        JobRecord held = a_job("second");
        held.state = JobState::held;
        ASSERT_TRUE(h->queue_jobs().add_job(held).ok());
        JobRecord bad = a_job("bad");
        bad.state = JobState::running;
        auto refused = h->queue_jobs().add_job(bad);
        ASSERT_FALSE(refused.ok());
        EXPECT_EQ(refused.error().message, "a new job is queued or held, not running");
    }
    auto h = History::open(path);
    ASSERT_TRUE(h.ok());
    auto j = h->queue_jobs().job(id);
    ASSERT_TRUE(j.ok()) << j.error().message;
    const JobRecord want = a_job("résumé ✓");
    EXPECT_EQ(j->name, want.name);
    EXPECT_EQ(j->argv, want.argv);
    EXPECT_EQ(j->env, want.env);
    EXPECT_EQ(j->cwd, want.cwd);
    EXPECT_EQ(j->request, want.request);
    EXPECT_EQ(j->after, want.after);
    EXPECT_TRUE(j->after_ok);
    EXPECT_EQ(j->priority, 3);
    EXPECT_EQ(j->state, JobState::queued);
    EXPECT_EQ(j->owner_uid, 1000u);
    EXPECT_EQ(j->submit_ms, want.submit_ms);
    EXPECT_FALSE(j->start_ms.has_value());
    EXPECT_EQ(h->queue_jobs().jobs()->size(), 2u);
    auto missing = h->queue_jobs().job(99);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().message, "no job 99 in the queue");
    EXPECT_EQ(h->integrity(), "ok");
}

TEST(HistoryJobs, EveryChangeIsGuardedByTheStateItLeaves) {
    test::TempDir d;
    auto h = History::open(d.path() + "/h.db");
    ASSERT_TRUE(h.ok());
    const std::int64_t a = *h->queue_jobs().add_job(a_job("a")), b = *h->queue_jobs().add_job(a_job("b"));

    // b is cancelled before the plan that would start it is recorded: only a starts.
    ASSERT_TRUE(*h->queue_jobs().change_job_state(b, {JobState::queued, JobState::held}, JobState::cancelled, 5000,
                                                  std::nullopt, "cancelled by uid 1000"));
    auto moved = h->queue_jobs().start_jobs({{a, {"GPU-1", "GPU-2"}, {0, 1}}, {b, {"GPU-3"}, {2}}}, 4000);
    ASSERT_TRUE(moved.ok()) << moved.error().message;
    EXPECT_EQ(*moved, std::vector<std::int64_t>{a});
    JobRecord ja = *h->queue_jobs().job(a);
    EXPECT_EQ(ja.state, JobState::starting);
    EXPECT_EQ(ja.gpus, (std::vector<std::string>{"GPU-1", "GPU-2"}));
    EXPECT_EQ(ja.cpus, (std::vector<unsigned>{0, 1}));
    EXPECT_EQ(ja.start_ms, 4000);
    JobRecord jb = *h->queue_jobs().job(b);
    EXPECT_EQ(jb.state, JobState::cancelled);
    EXPECT_EQ(jb.note, "cancelled by uid 1000");
    EXPECT_EQ(jb.end_ms, 5000);
    EXPECT_TRUE(jb.gpus.empty());

    EXPECT_FALSE(*h->queue_jobs().job_running(b, 42, 7, "boot", std::nullopt)) << "not starting";
    ASSERT_TRUE(*h->queue_jobs().job_running(a, 4242, 123456, "boot-1", 17));
    EXPECT_FALSE(*h->queue_jobs().job_running(a, 1, 1, "x", std::nullopt)) << "already running";
    ja = *h->queue_jobs().job(a);
    EXPECT_EQ(ja.state, JobState::running);
    EXPECT_EQ(ja.pid, 4242u);
    EXPECT_EQ(ja.pid_start_ticks, 123456u);
    EXPECT_EQ(ja.boot_id, "boot-1");
    EXPECT_EQ(ja.run_id, 17);
    EXPECT_EQ(h->queue_jobs().jobs(true)->size(), 1u) << "open jobs: a only";

    // A pause (baton pause) is kept on a running job only, and forgotten by any change of its state.
    EXPECT_FALSE(*h->queue_jobs().set_job_paused(b, 7000)) << "b is not running";
    ASSERT_TRUE(*h->queue_jobs().set_job_paused(a, 7000));
    EXPECT_EQ(h->queue_jobs().job(a)->paused_ms, 7000);
    EXPECT_EQ(History::open(d.path() + "/h.db")->queue_jobs().job(a)->paused_ms, 7000)
        << "in the file, for the next agent";
    ASSERT_TRUE(*h->queue_jobs().set_job_paused(a, std::nullopt));
    EXPECT_FALSE(h->queue_jobs().job(a)->paused_ms.has_value());
    ASSERT_TRUE(*h->queue_jobs().set_job_paused(a, 7500));

    EXPECT_FALSE(*h->queue_jobs().requeue_job(a, "retry")) << "a running job is not requeued";
    EXPECT_FALSE(*h->queue_jobs().change_job_state(a, {JobState::queued}, JobState::held, 6000))
        << "hold only what waits";
    ASSERT_TRUE(*h->queue_jobs().change_job_state(a, {JobState::starting, JobState::running}, JobState::failed, 9000,
                                                  137, "killed by signal 9"));
    ja = *h->queue_jobs().job(a);
    EXPECT_EQ(ja.state, JobState::failed);
    EXPECT_FALSE(ja.paused_ms.has_value()) << "it ended: no longer paused";
    EXPECT_EQ(ja.exit_status, 137);
    EXPECT_EQ(ja.gpus, (std::vector<std::string>{"GPU-1", "GPU-2"})) << "what it ran on";
    EXPECT_EQ(ja.cpus, (std::vector<unsigned>{0, 1}));
    EXPECT_FALSE(*h->queue_jobs().change_job_state(a, {JobState::starting, JobState::running}, JobState::done, 9500))
        << "ended once";

    ASSERT_TRUE(*h->queue_jobs().requeue_job(a, "retry 1 after CUDA out of memory"));
    ja = *h->queue_jobs().job(a);
    EXPECT_EQ(ja.state, JobState::queued);
    EXPECT_EQ(ja.attempt, 1);
    EXPECT_FALSE(ja.pid.has_value());
    EXPECT_FALSE(ja.exit_status.has_value());
    EXPECT_EQ(ja.note, "retry 1 after CUDA out of memory");

    // State names are parsed where they enter: one this baton does not know reads as lost.
    EXPECT_FALSE(state_from_name("paused"));
    EXPECT_EQ(state_from_name("running"), JobState::running);
    EXPECT_STREQ(state_name(JobState::cancelled), "cancelled");
}

// baton queue clean: ended jobs only, the owner's, never one kept or the newest (its id would be given
// again), and all or nothing.
TEST(HistoryJobs, RemovingEndedJobsKeepsTheOpenTheKeptAndTheNewest) {
    test::TempDir d;
    auto h = History::open(d.path() + "/h.db");
    ASSERT_TRUE(h.ok());
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 6; ++i) {
        JobRecord j = a_job("j" + std::to_string(i));
        j.owner_uid = i == 3 ? 2000 : 1000;
        ids.push_back(*h->queue_jobs().add_job(j));
    }
    // 0 done, 1 failed, 2 cancelled, 3 done (another owner's), 4 queued, 5 done (the newest).
    auto end = [&](std::int64_t id, JobState to) {
        ASSERT_TRUE(*h->queue_jobs().change_job_state(id, {JobState::queued}, to, 100, to == JobState::done ? 0 : 1));
    };
    end(ids[0], JobState::done);
    end(ids[1], JobState::failed);
    end(ids[2], JobState::cancelled);
    end(ids[3], JobState::done);
    end(ids[5], JobState::done);
    auto removed = h->queue_jobs().remove_ended_jobs(1000u, true, {});
    ASSERT_TRUE(removed.ok()) << removed.error().message;
    EXPECT_EQ(*removed, std::vector<std::int64_t>{ids[0]});
    removed = h->queue_jobs().remove_ended_jobs(1000u, false, {ids[1]});
    EXPECT_EQ(*removed, std::vector<std::int64_t>{ids[2]});
    removed = h->queue_jobs().remove_ended_jobs(std::nullopt, false, {});
    EXPECT_EQ(*removed, (std::vector<std::int64_t>{ids[1], ids[3]}));
    EXPECT_EQ(h->queue_jobs().job(ids[4])->state, JobState::queued);
    EXPECT_EQ(h->queue_jobs().job(ids[5])->state, JobState::done);
    EXPECT_FALSE(h->queue_jobs().job(ids[0]).ok());
    EXPECT_GT(*h->queue_jobs().add_job(a_job("next")), ids[5]) << "a new id";
}

TEST(HistoryJobs, TwoWritersNeverStartOneJobTwice) {
    test::TempDir d;
    const std::string path = d.path() + "/h.db";
    std::vector<std::int64_t> ids;
    {
        auto h = History::open(path);
        ASSERT_TRUE(h.ok());
        for (int i = 0; i < 60; ++i) ids.push_back(*h->queue_jobs().add_job(a_job("j" + std::to_string(i))));
    }
    std::vector<std::int64_t> got[2];
    std::string errors[2];
    auto writer = [&](int w) {
        auto h = History::open(path);
        if (!h.ok()) {
            errors[w] = h.error().message;
            return;
        }
        for (std::int64_t id : ids) {
            auto moved = h->queue_jobs().start_jobs({{id, {"GPU-" + std::to_string(w)}, {}}}, 1000 + w);
            if (!moved.ok()) {
                errors[w] = moved.error().message;
                return;
            }
            got[w].insert(got[w].end(), moved->begin(), moved->end());
        }
    };
    std::thread t0(writer, 0), t1(writer, 1);
    t0.join();
    t1.join();
    ASSERT_EQ(errors[0], "");
    ASSERT_EQ(errors[1], "");
    std::set<std::int64_t> all(got[0].begin(), got[0].end());
    for (std::int64_t id : got[1]) EXPECT_TRUE(all.insert(id).second) << "job " << id << " started twice";
    EXPECT_EQ(all.size(), ids.size());
    auto h = History::open(path);
    ASSERT_TRUE(h.ok());
    auto jobs = h->queue_jobs().jobs();
    ASSERT_TRUE(jobs.ok());
    for (const JobRecord& j : *jobs) {
        ASSERT_EQ(j.gpus.size(), 1u);
        const int w = j.gpus[0] == "GPU-0" ? 0 : 1;
        EXPECT_NE(std::find(got[w].begin(), got[w].end(), j.id), got[w].end()) << "the GPU of the writer that won";
    }
}

// An array in one transaction: consecutive ids, each element's array_id its first one's, each index
// kept; a batch with one job that cannot be added adds none.
TEST(HistoryJobs, AnArrayIsAddedWholeOrNotAtAll) {
    test::TempDir d;
    auto h = History::open(d.path() + "/h.db");
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(h->queue_jobs().add_job(a_job("before")).ok());
    std::vector<JobRecord> elements;
    for (int i = 0; i < 1000; ++i) {
        JobRecord j = a_job("sweep");
        j.argv = {"train", std::to_string(i * 10)};
        j.array_index = i * 10;
        elements.push_back(j);
    }
    Result<std::vector<std::int64_t>> ids = h->queue_jobs().add_jobs(elements, true);
    ASSERT_TRUE(ids.ok()) << ids.error().message;
    ASSERT_EQ(ids->size(), 1000u);
    for (std::size_t k = 0; k < ids->size(); ++k) EXPECT_EQ((*ids)[k], 2 + static_cast<std::int64_t>(k));
    auto all = h->queue_jobs().jobs();
    ASSERT_EQ(all->size(), 1001u);
    EXPECT_FALSE(all->front().array_id.has_value());
    for (std::size_t k = 1; k < all->size(); ++k) {
        EXPECT_EQ((*all)[k].array_id, 2);
        EXPECT_EQ((*all)[k].array_index, static_cast<std::int64_t>(k - 1) * 10);
        EXPECT_EQ((*all)[k].argv[1], std::to_string((k - 1) * 10));
    }
    // A plain job keeps the array it is given (a restarted element).
    JobRecord again = a_job("again");
    again.array_id = 2;
    again.array_index = 30;
    const std::int64_t id = *h->queue_jobs().add_job(again);
    EXPECT_EQ(h->queue_jobs().job(id)->array_id, 2);
    EXPECT_EQ(h->queue_jobs().job(id)->array_index, 30);

    std::vector<JobRecord> bad = {a_job("x"), a_job("y")};
    bad[1].state = JobState::running;
    EXPECT_FALSE(h->queue_jobs().add_jobs(bad, true).ok());
    EXPECT_EQ(h->queue_jobs().jobs()->size(), 1002u);
    EXPECT_TRUE(h->queue_jobs().add_jobs({}, true)->empty());
}

TEST(HistoryJobs, GroupsAreAddedChangedAndRemoved) {
    test::TempDir d;
    const std::string path = d.path() + "/h.db";
    {
        auto h = History::open(path);
        ASSERT_TRUE(h.ok());
        EXPECT_TRUE(h->queue_jobs().job_groups()->empty());
        ASSERT_TRUE(h->queue_jobs().set_job_group({"serial", 1, 1000}).ok());
        ASSERT_TRUE(h->queue_jobs().set_job_group({"eval", 3, 1001}).ok());
        ASSERT_TRUE(h->queue_jobs().set_job_group({"serial", 2, 0}).ok());  // a change keeps who added it
    }
    auto h = History::open(path);
    auto groups = h->queue_jobs().job_groups();
    ASSERT_EQ(groups->size(), 2u);
    EXPECT_EQ((*groups)[0].name, "eval");
    EXPECT_EQ((*groups)[1].name, "serial");
    EXPECT_EQ((*groups)[1].parallel, 2u);
    EXPECT_EQ((*groups)[1].owner_uid, 1000u);
    EXPECT_TRUE(*h->queue_jobs().remove_job_group("eval"));
    EXPECT_FALSE(*h->queue_jobs().remove_job_group("eval"));
    EXPECT_EQ(h->queue_jobs().job_groups()->size(), 1u);
}

TEST(HistoryJobs, AnEditTakesOnlyWhileTheJobWaits) {
    test::TempDir d;
    auto h = History::open(d.path() + "/h.db");
    ASSERT_TRUE(h.ok());
    const std::int64_t id = *h->queue_jobs().add_job(a_job("before"));
    JobRecord j = *h->queue_jobs().job(id);
    j.name = "after";
    j.argv = {"echo", "\xff new"};
    j.request = R"({"gpus":1})";
    j.priority = -2;
    j.after = {};
    j.after_ok = false;
    ASSERT_TRUE(*h->queue_jobs().edit_job(j));
    const JobRecord back = *h->queue_jobs().job(id);
    EXPECT_EQ(back.name, "after");
    EXPECT_EQ(back.argv, j.argv);
    EXPECT_EQ(back.request, j.request);
    EXPECT_EQ(back.priority, -2);
    EXPECT_TRUE(back.after.empty());
    EXPECT_EQ(back.env, a_job("x").env);  // untouched
    ASSERT_EQ(h->queue_jobs().start_jobs({{id, {}, {}}}, 5)->size(), 1u);
    j.name = "too late";
    EXPECT_FALSE(*h->queue_jobs().edit_job(j));
    EXPECT_EQ(h->queue_jobs().job(id)->name, "after");
}
