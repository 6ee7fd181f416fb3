// The queue's watches: each job's stderr read as it grows (at most 1 MiB a sample, the rest at its
// end), its cgroup's OOM kills turned into the finding, the run the history names reported once,
// and a watch taken back no longer fed. On this process as the job, with a real history.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <unistd.h>

#include "queue/job_watches.hpp"
#include "test_support.hpp"

using baton::Thresholds;
using baton::diagnose::Window;
using baton::queue::finish_watch;
using baton::queue::JobWatches;
using baton::queue::read_stderr;
using baton::queue::ShimStatus;
using baton::queue::start_watch;
using baton::queue::WatchedJob;

namespace {

baton::store::JobRecord watched_record(std::int64_t id) {
    baton::store::JobRecord j;
    j.id = id;
    j.name = "train";
    j.argv = {"python3", "train.py"};
    j.cwd = "/tmp";
    return j;
}

bool has_rule(const baton::run::RunStats& s, const std::string& rule) {
    for (const baton::diagnose::Finding& f : s.findings)
        if (f.rule == rule) return true;
    return false;
}

}  // namespace

TEST(JobWatches, EachSampleReadsAtMostAMebibyteOfOutputAndTheEndReadsTheRest) {
    baton::test::TempDir d;
    auto w = std::make_unique<WatchedJob>();
    start_watch(*w, watched_record(7), ::getpid(), d.path(), {"CUDA_VISIBLE_DEVICES=1"}, Thresholds{}, nullptr);
    EXPECT_EQ(w->stderr_path, d.path() + "/stderr");
    const std::string output =
        std::string(1536 * 1024, 'x') + "\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n";
    std::ofstream(w->stderr_path) << output;

    JobWatches watches;
    WatchedJob* raw = w.get();
    watches.add(7, std::move(w));
    EXPECT_EQ(watches.size(), 1u);
    watches.feed(Window{});
    EXPECT_EQ(raw->stderr_read, 16u * 65536);  // (one job writing fast cannot hold the sampler)
    EXPECT_EQ(watches.take(8), nullptr);
    std::unique_ptr<WatchedJob> back = watches.take(7);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(watches.size(), 0u);
    watches.feed(Window{});  // (no longer fed)
    EXPECT_EQ(back->stderr_read, 16u * 65536);

    ShimStatus st;
    st.started = true;
    st.exit_status = 1;
    const baton::run::RunStats stats = finish_watch(*back, st, 0);
    EXPECT_EQ(back->stderr_read, output.size());
    EXPECT_TRUE(has_rule(stats, "cuda_oom"));
    EXPECT_EQ(stats.exit_status, 1);
}

TEST(JobWatches, ReadStderrStopsAtItsChunksOrAtTheEnd) {
    baton::test::TempDir d;
    WatchedJob w;
    start_watch(w, watched_record(1), ::getpid(), d.path(), {}, Thresholds{}, nullptr);
    read_stderr(w, 0);  // (no file yet: nothing read, no error)
    EXPECT_EQ(w.stderr_read, 0u);
    std::ofstream(w.stderr_path) << std::string(65536 * 2 + 10, 'y');
    read_stderr(w, 1);
    EXPECT_EQ(w.stderr_read, 65536u);
    read_stderr(w, 0);
    EXPECT_EQ(w.stderr_read, 65536u * 2 + 10);
}

TEST(JobWatches, TheCgroupsOomKillsAreTheJobsOutOfMemoryFinding) {
    baton::test::TempDir d;
    WatchedJob w;
    start_watch(w, watched_record(2), ::getpid(), d.path(), {}, Thresholds{}, nullptr);
    ShimStatus st;
    st.started = true;
    st.exit_status = 137;
    st.signal = 9;
    st.oom_kills = 2;
    const baton::run::RunStats stats = finish_watch(w, st, 1ull << 30);
    ASSERT_TRUE(has_rule(stats, "host_oom_kill"));
    for (const baton::diagnose::Finding& f : stats.findings) {
        if (f.rule != "host_oom_kill") continue;
        EXPECT_NE(f.summary.find("its --mem 1 GiB"), std::string::npos) << f.summary;
        EXPECT_EQ(f.evidence.at(0).metric, "cgroup.memory_events_oom_kill");
    }
}

TEST(JobWatches, TheRunTheHistoryNamesIsReportedOnce) {
    baton::test::TempDir d;
    auto w = std::make_unique<WatchedJob>();
    start_watch(*w, watched_record(3), ::getpid(), d.path(), {}, Thresholds{},
                std::make_shared<baton::store::SharedHistory>(d.path() + "/history.db"));
    JobWatches watches;
    watches.add(3, std::move(w));
    std::vector<std::pair<std::int64_t, std::int64_t>> found;
    for (int i = 0; i < 500 && found.empty(); ++i) {
        found = watches.newly_recorded();
        if (found.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].first, 3);
    EXPECT_GT(found[0].second, 0);
    EXPECT_TRUE(watches.newly_recorded().empty());
    std::unique_ptr<WatchedJob> back = watches.take(3);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(finish_watch(*back, ShimStatus{}, 0).recording.run_id, found[0].second);
}
