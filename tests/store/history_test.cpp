// The SQLite run history: records survive a reopen, a run whose baton died shows as interrupted,
// samples round-trip through their packed form, pruning, and the size of a one-hour run.
#include <gtest/gtest.h>

#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/history.hpp"
#include "test_support.hpp"

using namespace baton;

namespace {

RunSample sample(std::int64_t t, unsigned gpus) {
    RunSample s;
    s.t_ms = t;
    s.cpu_percent = 55.5f;
    s.iowait_percent = 1.25f;
    s.memory_used_gib = 31.0f;
    s.job_cpu_percent = 412.0f;
    s.job_rss_gib = 12.5f;
    for (unsigned g = 0; g < gpus; ++g)
        s.gpus.push_back({static_cast<std::uint8_t>(g), 97.0f, 70.25f, g % 2 ? -1.0f : 81.0f});
    return s;
}

}  // namespace

TEST(History, RecordsSurviveAReopen) {
    test::TempDir d;
    const std::string path = d.path() + "/state/baton/baton.db";  // the directory is created
    {
        auto h = History::open(path);
        ASSERT_TRUE(h.ok()) << h.error().message;
        auto run = h->begin_run("train", "[\"python\",\"train.py\"]", "/work", "box", 1000);
        ASSERT_TRUE(run.ok());
        ASSERT_TRUE(h->add_sample(*run, sample(1500, 4)).ok());
        ASSERT_TRUE(h->add_sample(*run, sample(2000, 4)).ok());
        Finding f;
        f.rule = "input_bound";
        f.severity = Severity::warning;
        f.subject = "gpu:0";
        f.summary = "GPU0 waits";
        f.recommendation = "num_workers=7";
        ASSERT_TRUE(h->add_finding(*run, 1800, f).ok());
        ASSERT_TRUE(h->finish_run(*run, 2500, 0, "{}").ok());
    }
    auto h = History::open(path);
    ASSERT_TRUE(h.ok());
    auto runs = h->runs();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u);
    const RunRecord& r = (*runs)[0];
    EXPECT_EQ(r.name, "train");
    EXPECT_EQ(r.state, "finished");
    EXPECT_EQ(r.exit_status, 0);
    EXPECT_EQ(r.end_ms, 2500);
    EXPECT_EQ(r.samples, 2);
    EXPECT_EQ(r.findings, 1);
    auto s = h->samples(r.id);
    ASSERT_TRUE(s.ok());
    ASSERT_EQ(s->size(), 2u);
    EXPECT_EQ((*s)[1].t_ms, 2000);
    ASSERT_EQ((*s)[1].gpus.size(), 4u);
    EXPECT_FLOAT_EQ((*s)[1].gpus[2].memory_used_gib, 70.25f);
    EXPECT_FLOAT_EQ((*s)[1].gpus[1].sm_activity, -1.0f);
    EXPECT_FLOAT_EQ((*s)[1].job_cpu_percent, 412.0f);
    EXPECT_EQ(h->integrity(), "ok");
}

TEST(History, RunOfADeadBatonIsInterrupted) {
    test::TempDir d;
    const std::string path = d.path() + "/baton.db";
    pid_t child = fork();
    if (child == 0) {  // a baton that starts a run and dies without finishing it
        auto h = History::open(path);
        auto run = h->begin_run("doomed", "[\"sleep\"]", "/", "box", 1000);
        h->add_sample(*run, sample(1500, 1));
        _exit(0);  // no destructor, no finish: as after kill -9
    }
    waitpid(child, nullptr, 0);
    auto h = History::open(path);
    ASSERT_TRUE(h.ok());
    auto runs = h->runs();
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_EQ((*runs)[0].state, "interrupted");
    EXPECT_EQ((*runs)[0].samples, 1);
    // A run of this (living) process stays running.
    auto mine = h->begin_run("alive", "[]", "/", "box", 2000);
    auto again = History::open(path);
    EXPECT_EQ((*again->runs())[1].state, "running");
    (void)mine;
}

TEST(History, PackingAndDamage) {
    RunSample s = sample(42, 8), back;
    const std::string blob = History::pack(s);
    EXPECT_EQ(blob.size(), 2u + 6 * 4 + 8 * 13);
    ASSERT_TRUE(History::unpack(blob, back));
    EXPECT_EQ(back.gpus.size(), 8u);
    EXPECT_FLOAT_EQ(back.cpu_percent, 55.5f);
    EXPECT_FALSE(History::unpack("", back));
    EXPECT_FALSE(History::unpack(blob.substr(0, blob.size() - 1), back));       // truncated
    EXPECT_FALSE(History::unpack(std::string("\x02") + blob.substr(1), back));  // unknown version
    EXPECT_FALSE(History::unpack(blob + "x", back));                            // trailing bytes
}

TEST(History, NewerSchemaAndPrune) {
    test::TempDir d;
    const std::string path = d.path() + "/baton.db";
    {
        auto h = History::open(path);
        auto old_run = h->begin_run("old", "[]", "/", "box", 1000);
        h->finish_run(*old_run, 2000, 0, "{}");
        auto new_run = h->begin_run("new", "[]", "/", "box", 90000);
        h->finish_run(*new_run, 95000, 1, "{}");
        auto pruned = h->prune(50000);
        ASSERT_TRUE(pruned.ok());
        EXPECT_EQ(*pruned, 1);
        auto runs = h->runs();
        ASSERT_EQ(runs->size(), 1u);
        EXPECT_EQ((*runs)[0].name, "new");
    }
    test::TempDir e;
    ASSERT_TRUE(History::open(e.path() + "/f.db").ok());
    {  // as if a newer baton had migrated it further
        sqlite3* db = nullptr;
        sqlite3_open((e.path() + "/f.db").c_str(), &db);
        sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
        sqlite3_close(db);
    }
    auto future = History::open(e.path() + "/f.db");
    ASSERT_FALSE(future.ok());
    EXPECT_NE(future.error().message.find("written by a newer baton (schema 99"), std::string::npos)
        << future.error().message;
    test::TempDir g;
    g.write("garbage.db", std::string(4096, 'x'));
    auto bad = History::open(g.path() + "/garbage.db");
    EXPECT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("garbage.db"), std::string::npos) << bad.error().message;
}

TEST(History, AnHourAtHalfASecondWithFourGpusStaysSmall) {
    test::TempDir d;
    const std::string path = d.path() + "/baton.db";
    {
        auto h = History::open(path);
        auto run = h->begin_run("hour", "[]", "/", "box", 0);
        for (int i = 0; i < 7200; ++i) ASSERT_TRUE(h->add_sample(*run, sample(i * 500, 4)).ok());
        h->finish_run(*run, 3600000, 0, "{}");
    }
    { auto reopened = History::open(path); }  // the last connection's close checkpoints the WAL
    std::uintmax_t bytes = std::filesystem::file_size(path);
    if (std::filesystem::exists(path + "-wal")) bytes += std::filesystem::file_size(path + "-wal");
    RecordProperty("bytes", static_cast<int>(bytes));
    EXPECT_LT(bytes, 20u << 20) << bytes;
    std::printf("one hour, 0.5 s, 4 GPUs: %.2f MB\n", static_cast<double>(bytes) / 1e6);
}
