// baton run's recorder: writes never block the caller, a failing database is said once and retried
// until it works again, the queue is bounded (oldest samples dropped, counted), and the report
// says exactly which part of the run is missing.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <sqlite3.h>

#include "core/clock.hpp"
#include "store/history_writer.hpp"
#include "test_support.hpp"
#include "store/history_runs.hpp"

using namespace baton;
using namespace baton::store;

namespace {

struct Notes {
    std::mutex m;
    std::vector<std::string> lines;
    HistoryWriter::Options options(double retry = 0.05) {
        HistoryWriter::Options o;
        o.retry_seconds = retry;
        o.say = [this](const std::string& l) {
            std::lock_guard<std::mutex> lock(m);
            lines.push_back(l);
        };
        return o;
    }
    std::size_t count(const std::string& part) {
        std::lock_guard<std::mutex> lock(m);
        std::size_t n = 0;
        for (const std::string& l : lines) n += l.find(part) != std::string::npos;
        return n;
    }
};

RunHeader header() {
    RunHeader h;
    h.name = "train";
    h.command = "python train.py";
    h.cwd = "/";
    h.host = "box";
    h.start_ms = 1000;
    return h;
}

RunSample sample(std::int64_t t) {
    RunSample s;
    s.t_ms = t;
    s.cpu_percent = 50;
    return s;
}

std::string summary_of(const RecordingReport& r) {
    return r.complete() ? "complete" : "incomplete";
}

}  // namespace

TEST(HistoryWriter, EverythingReachesTheDatabase) {
    test::TempDir d;
    const std::string path = d.path() + "/baton.db";
    Notes notes;
    HistoryWriter w(path, header(), notes.options());
    w.set_machine(8, 64ull << 30, {{0, "GPU-a", "H200", 141ull << 30}});
    for (int i = 0; i < 50; ++i) w.add_sample(sample(1000 + i * 100));
    diagnose::Finding f;
    f.rule = "input_bound";
    f.subject = "job";
    w.add_finding(2000, f);
    StepEvent e;
    e.t_ms = 1500;
    w.add_steps({e, e, e});
    const RecordingReport r = w.finish(9000, 3, summary_of);
    EXPECT_TRUE(r.complete());
    EXPECT_EQ(r.run_id, 1);
    EXPECT_TRUE(notes.lines.empty());
    auto h = History::open(path, HistoryAccess::read);
    const RunRecord run = *h->run_reads().run(1);
    EXPECT_EQ(run.state, RunState::finished);
    EXPECT_EQ(run.exit_status, 3);
    EXPECT_EQ(run.summary, "complete");  // the summary was made for a complete record
    EXPECT_EQ(run.samples, 50);
    EXPECT_EQ(run.findings, 1);
    EXPECT_EQ(run.cpu_count, 8u);
    EXPECT_EQ(h->run_reads().steps(1)->size(), 3u);
}

TEST(HistoryWriter, ALockedDatabaseNeverBlocksTheCaller) {
    test::TempDir d;
    const std::string path = d.path() + "/baton.db";
    ASSERT_TRUE(History::open(path).ok());
    sqlite3* other = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    Notes notes;
    HistoryWriter w(path, header(), notes.options());
    double slowest = 0;
    for (int i = 0; i < 30; ++i) {  // 1.5 s of samples while another process holds the lock
        const double t0 = monotonic_seconds();
        w.add_sample(sample(1000 + i));
        slowest = std::max(slowest, monotonic_seconds() - t0);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_LT(slowest, 0.05);
    sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(other);
    const RecordingReport r = w.finish(9000, 0, summary_of);
    EXPECT_TRUE(r.complete()) << r.error;
    EXPECT_GE(r.longest_wait_seconds, 1.4);  // the gap is reported
    EXPECT_EQ((*History::open(path, HistoryAccess::read)->run_reads().run(1)).samples, 30);
}

TEST(HistoryWriter, AFailingDatabaseIsSaidOnceRetriedAndResumed) {
    test::TempDir d;
    // The database's directory is a regular file: nothing can be created there until it is
    // replaced by a directory (as a full disk gets space back).
    d.write("state", "not a directory");
    const std::string path = d.path() + "/state/baton.db";
    Notes notes;
    HistoryWriter::Options o = notes.options(0.05);
    o.max_queued_samples = 5;
    HistoryWriter w(path, header(), o);
    // Waits for what the writer's thread does, not for a time: a loaded machine (the sanitizer run
    // beside other suites) may take longer than any fixed sleep.
    auto eventually = [](const std::function<bool()>& done) { return test::eventually(done, 10); };
    for (int i = 0; i < 20; ++i) w.add_sample(sample(1000 + i));
    ASSERT_TRUE(eventually([&] { return notes.count("cannot record this run in " + path) == 1; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // several failed tries, said once
    EXPECT_EQ(notes.count("cannot record this run in " + path), 1u);
    d.remove("state");
    std::filesystem::create_directory(d.path() + "/state");
    ASSERT_TRUE(eventually([&] { return notes.count(" again") == 1; }));
    // The five queued samples reach the database before five more come.
    ASSERT_TRUE(eventually([&] {
        auto h = History::open(path, HistoryAccess::read);
        if (!h.ok()) return false;
        auto run = h->run_reads().run(1);
        return run.ok() && run->samples == 5;
    }));
    for (int i = 20; i < 25; ++i) w.add_sample(sample(1000 + i));
    const RecordingReport r = w.finish(9000, 0, summary_of);
    EXPECT_EQ(notes.count("cannot record"), 1u);  // said once
    EXPECT_EQ(notes.count("recording to " + path + " again (15 sample(s) dropped meanwhile)"), 1u);
    EXPECT_EQ(r.run_id, 1);
    EXPECT_EQ(r.samples_lost, 15u);  // the oldest, while the queue was full
    EXPECT_TRUE(r.end_recorded);
    EXPECT_FALSE(r.complete());
    const RunRecord run = *History::open(path, HistoryAccess::read)->run_reads().run(1);
    EXPECT_EQ(run.samples, 10);
    EXPECT_EQ(run.summary, "incomplete");
    auto samples = History::open(path, HistoryAccess::read)->run_reads().samples(1);
    EXPECT_EQ(samples->front().t_ms, 1015);  // the newest five of the first twenty, then five more
}

TEST(HistoryWriter, ADatabaseThatNeverWorksLosesTheRunAndSaysWhy) {
    test::TempDir d;
    d.write("state", "not a directory");
    const std::string path = d.path() + "/state/baton.db";
    Notes notes;
    HistoryWriter w(path, header(), notes.options(0.05));
    for (int i = 0; i < 7; ++i) w.add_sample(sample(1000 + i));
    diagnose::Finding f;
    w.add_finding(1, f);
    const double t0 = monotonic_seconds();
    const RecordingReport r = w.finish(9000, 0, summary_of);
    EXPECT_LT(monotonic_seconds() - t0, 2.0);  // two more tries, not the whole drain time
    EXPECT_EQ(r.run_id, 0);
    EXPECT_EQ(r.samples_lost, 7u);
    EXPECT_EQ(r.findings_lost, 1u);
    EXPECT_FALSE(r.end_recorded);
    EXPECT_NE(r.error.find("cannot open " + path), std::string::npos) << r.error;
    EXPECT_EQ(notes.count("cannot record"), 1u);
}

TEST(HistoryWriter, ManyWritersThroughOneSharedConnectionEachRecordTheirWholeRun) {
    test::TempDir d;
    // (The database cannot be opened at first: the shared connection opens when it can.)
    d.write("state", "not a directory");
    const std::string path = d.path() + "/state/baton.db";
    auto shared = std::make_shared<SharedHistory>(path);
    Notes notes;
    std::vector<std::unique_ptr<HistoryWriter>> writers;
    for (int j = 0; j < 8; ++j) {
        HistoryWriter::Options o = notes.options(0.05);
        o.shared = shared;
        RunHeader h = header();
        h.name = "job" + std::to_string(j);
        writers.push_back(std::make_unique<HistoryWriter>("", h, o));
    }
    for (int i = 0; i < 20; ++i)
        for (auto& w : writers) w->add_sample(sample(1000 + i));
    for (int i = 0; i < 500 && notes.count("cannot record") < writers.size(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    d.remove("state");
    std::filesystem::create_directory(d.path() + "/state");
    std::vector<std::thread> ends;  // (the writers finish at once, each from its own thread)
    std::vector<RecordingReport> reports(writers.size());
    for (std::size_t j = 0; j < writers.size(); ++j)
        ends.emplace_back([&, j] { reports[j] = writers[j]->finish(9000, static_cast<int>(j), summary_of); });
    for (std::thread& t : ends) t.join();
    auto h = History::open(path, HistoryAccess::read);
    ASSERT_TRUE(h.ok()) << h.error().message;
    std::set<std::int64_t> ids;
    for (std::size_t j = 0; j < writers.size(); ++j) {
        ASSERT_GT(reports[j].run_id, 0) << reports[j].error;
        EXPECT_EQ(reports[j].db_path, path);
        ids.insert(reports[j].run_id);
        const RunRecord run = *h->run_reads().run(reports[j].run_id);
        EXPECT_EQ(run.name, "job" + std::to_string(j));
        EXPECT_EQ(run.exit_status, static_cast<int>(j));
        EXPECT_EQ(run.samples, 20);
        EXPECT_EQ(run.state, RunState::finished);
    }
    EXPECT_EQ(ids.size(), writers.size());
}
