// The queue's watches: each job's stderr read as it grows (at most 1 MiB a sample, the rest at its
// end), its cgroup's OOM kills turned into the finding, the run the history names reported once,
// a watch taken back no longer fed, and a slow hang turn off the sampler. On this process as the
// job, with a real history.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <map>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

#include "hang/stack_shim.hpp"
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

// A look at a job's ranks waits up to 2 s for a rank that does not answer (here: a Python with the
// stack handler, stopped), and a Flight Recorder read up to 10 s: that happens on the hang thread,
// without the watches' lock, so the sampler's feed() and the queue thread's calls answer meanwhile.
TEST(JobWatches, ASlowHangTurnHoldsNeitherTheSamplerNorTheQueue) {
    baton::test::TempDir d;
    ASSERT_TRUE(baton::hang::install_shim(d.path() + "/shim", d.path() + "/stacks").ok());
    std::map<std::string, std::string> env{{"RANK", "0"}};
    for (const auto& [k, v] : baton::hang::shim_environment(d.path() + "/shim", d.path() + "/stacks", std::nullopt))
        env[k] = v;
    const int rank = baton::test::start_process({"/usr/bin/python3", "-c", "import time; time.sleep(120)"}, env);
    ASSERT_GT(rank, 0);
    const std::string handler = d.path() + "/stacks/" + std::to_string(rank) + ".txt";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (::access(handler.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(::access(handler.c_str(), F_OK), 0) << "the stack handler never came up";
    ::kill(rank, SIGSTOP);  // it takes the stack request only once it continues

    auto w = std::make_unique<WatchedJob>();
    w->stacks_dir = d.path() + "/stacks";
    start_watch(*w, watched_record(5), rank, d.path(), {}, Thresholds{}, nullptr);
    ASSERT_NE(w->hangs, nullptr);
    JobWatches watches;
    watches.add(5, std::move(w));

    auto seconds_of = [](const std::function<void()>& f) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    double turn = 0;
    std::atomic<bool> turning{true};
    std::thread hangs([&] {
        turn = seconds_of([&] { watches.hang_turns(); });
        turning = false;
    });
    double slowest = 0;
    int feeds = 0;
    const auto turn_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (turning && std::chrono::steady_clock::now() < turn_deadline) {
        slowest = std::max(slowest, seconds_of([&] { watches.feed(Window{}); }));
        slowest = std::max(slowest, seconds_of([&] { (void)watches.size(); }));
        ++feeds;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(rank, SIGKILL);  // (a turn still waiting on the rank ends with it)
    hangs.join();
    ::waitpid(rank, nullptr, 0);
    EXPECT_GE(turn, 1.5) << "the look waited for the stopped rank";
    EXPECT_GE(feeds, 10);
    EXPECT_LT(slowest, 0.5) << "a feed or a queue call waited for the turn";

    // The thread the agent runs: woken by feed(), stopped within its turn.
    watches.start_hang_thread();
    watches.feed(Window{});
    watches.stop_hang_thread();
    EXPECT_NE(watches.take(5), nullptr);
}
