// The SQLite run history: records survive a reopen, a run whose baton died shows as interrupted,
// samples round-trip through their packed form, pruning, and the size of a one-hour run.
#include <gtest/gtest.h>

#include <cstring>

#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/history.hpp"
#include "store/history_runs.hpp"
#include "store/history_jobs.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::store;

namespace {

constexpr double kGiB = 1073741824.0;

RunSample sample(std::int64_t t, unsigned gpus) {
    RunSample s;
    s.t_ms = t;
    s.cpu_percent = 55.5;
    s.iowait_percent = 1.25;
    s.memory_used_bytes = 31 * kGiB;
    s.job_cpu_percent = 412;
    s.job_rss_bytes = 12.5 * kGiB;
    s.disk_read_bytes_per_second = 250e6;
    s.disk_write_bytes_per_second = 3.5e6;
    for (unsigned g = 0; g < gpus; ++g) {
        RunSample::Gpu x;
        x.index = static_cast<std::uint8_t>(g);
        x.utilization_percent = 97;
        x.memory_used_bytes = 70.25 * kGiB;
        if (g % 2 == 0) x.sm_activity_percent = 81;  // odd GPUs: not reported
        s.gpus.push_back(x);
    }
    return s;
}

}  // namespace

TEST(History, RecordsSurviveAReopen) {
    test::TempDir d;
    const std::string path = d.path() + "/state/baton/baton.db";  // the directory is created
    {
        auto h = History::open(path);
        ASSERT_TRUE(h.ok()) << h.error().message;
        auto run = h->run_writes().begin_run("train", "[\"python\",\"train.py\"]", "/work", "box", 1000);
        ASSERT_TRUE(run.ok());
        ASSERT_TRUE(h->run_writes().add_sample(*run, sample(1500, 4)).ok());
        ASSERT_TRUE(h->run_writes().add_sample(*run, sample(2000, 4)).ok());
        diagnose::Finding f;
        f.rule = "input_bound";
        f.severity = diagnose::Severity::warning;
        f.subject = "gpu:0";
        f.summary = "GPU0 waits";
        f.recommendation = "num_workers=7";
        ASSERT_TRUE(h->run_writes().add_finding(*run, 1800, f).ok());
        ASSERT_TRUE(h->run_writes().finish_run(*run, 2500, 0, "{}").ok());
    }
    auto h = History::open(path);
    ASSERT_TRUE(h.ok());
    auto runs = h->run_reads().runs();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u);
    const RunRecord& r = (*runs)[0];
    EXPECT_EQ(r.name, "train");
    EXPECT_EQ(r.state, RunState::finished);
    EXPECT_EQ(r.exit_status, 0);
    EXPECT_EQ(r.end_ms, 2500);
    EXPECT_EQ(r.samples, 2);
    EXPECT_EQ(r.findings, 1);
    auto s = h->run_reads().samples(r.id);
    ASSERT_TRUE(s.ok());
    ASSERT_EQ(s->size(), 2u);
    EXPECT_EQ((*s)[1].t_ms, 2000);
    ASSERT_EQ((*s)[1].gpus.size(), 4u);
    EXPECT_DOUBLE_EQ((*s)[1].gpus[2].memory_used_bytes, 70.25 * kGiB);
    EXPECT_FALSE((*s)[1].gpus[1].sm_activity_percent.has_value());
    EXPECT_FLOAT_EQ((*s)[1].job_cpu_percent, 412.0f);
    EXPECT_EQ(h->integrity(), "ok");
}

// A finding said better later (cuda_oom once the hook's capture came) replaces its record: one row,
// the first sighting's time, the new text and evidence; with no record yet it is recorded. The
// out-of-memory captures are kept as written, oldest first.
TEST(History, AFindingReplacedAndOomCaptures) {
    test::TempDir d;
    auto h = History::open(d.path() + "/h.db");
    ASSERT_TRUE(h.ok()) << h.error().message;
    auto run = h->run_writes().begin_run("train", "python train.py", "/work", "box", 1000);
    ASSERT_TRUE(run.ok());
    diagnose::Finding f;
    f.rule = "cuda_oom";
    f.severity = diagnose::Severity::critical;
    f.subject = "job";
    f.summary = "the job ran out of GPU memory";
    f.recommendation = "smaller batch";
    ASSERT_TRUE(h->run_writes().add_finding(*run, 1500, f).ok());
    f.summary = "GPU0 ran out of memory: activations 60.00 GiB";
    diagnose::Evidence e;
    e.metric = "oom.activations_bytes";
    e.maximum = 6.4e10;
    f.evidence = {e};
    ASSERT_TRUE(h->run_writes().replace_finding(*run, 1700, f).ok());
    f.rule = "gpu_memory_leak";
    ASSERT_TRUE(h->run_writes().replace_finding(*run, 1800, f).ok());  // none to replace: recorded
    auto found = h->run_reads().findings(*run);
    ASSERT_TRUE(found.ok());
    ASSERT_EQ(found->size(), 2u);
    EXPECT_EQ((*found)[0].rule, "cuda_oom");
    EXPECT_EQ((*found)[0].t_ms, 1500);
    EXPECT_EQ((*found)[0].summary, "GPU0 ran out of memory: activations 60.00 GiB");
    ASSERT_EQ((*found)[0].evidence.size(), 1u);
    EXPECT_EQ((*found)[0].evidence[0].metric, "oom.activations_bytes");
    EXPECT_EQ((*found)[1].t_ms, 1800);
    ASSERT_TRUE(h->run_writes().add_oom_capture(*run, {1600, 1, 4242, "{\"baton_oom_capture\":1}"}).ok());
    ASSERT_TRUE(h->run_writes().add_oom_capture(*run, {1550, 0, 4241, "{}"}).ok());
    auto captures = h->run_reads().oom_captures(*run);
    ASSERT_TRUE(captures.ok());
    ASSERT_EQ(captures->size(), 2u);
    EXPECT_EQ((*captures)[0].pid, 4241u);
    EXPECT_EQ((*captures)[1].rank, 1);
    EXPECT_EQ((*captures)[1].json, "{\"baton_oom_capture\":1}");
}

TEST(History, RunOfADeadBatonIsInterrupted) {
    test::TempDir d;
    const std::string path = d.path() + "/baton.db";
    pid_t child = fork();
    if (child == 0) {  // a baton that starts a run and dies without finishing it
        auto h = History::open(path);
        auto run = h->run_writes().begin_run("doomed", "[\"sleep\"]", "/", "box", 1000);
        ASSERT_TRUE(h->run_writes().add_sample(*run, sample(1500, 1)).ok());
        _exit(0);  // no destructor, no finish: as after kill -9
    }
    waitpid(child, nullptr, 0);
    auto h = History::open(path);
    ASSERT_TRUE(h.ok());
    auto runs = h->run_reads().runs();
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_EQ((*runs)[0].state, RunState::interrupted);
    EXPECT_EQ((*runs)[0].samples, 1);
    // A run of this (living) process stays running.
    auto mine = h->run_writes().begin_run("alive", "[]", "/", "box", 2000);
    auto again = History::open(path);
    EXPECT_EQ((*again->run_reads().runs())[1].state, RunState::running);
    (void)mine;
}

TEST(History, PackingAndDamage) {
    RunSample s = sample(42, 8), back;
    s.gpus[3].power_watts = 655.5;
    s.gpus[3].temperature_celsius = 81;
    s.gpus[3].sm_clock_mhz = 1410;
    s.gpus[3].throttle_reasons = 1u << 5;  // sw_thermal_slowdown
    s.gpus[4].throttle_reasons = 0;        // reported: none
    const std::string blob = pack_sample(s);
    EXPECT_EQ(blob.size(), 2u + 8 * 4 + 8 * 27);  // version 3: 13 bytes per GPU and 14 more
    ASSERT_TRUE(unpack_sample(blob, back));
    EXPECT_EQ(back.gpus.size(), 8u);
    // The blob keeps the units it always had (GiB, MB/s as f32): memory at byte 10 is 31.0f, the read
    // rate at byte 26 is 250.0f, whatever the struct's units are.
    float at10 = 0, at26 = 0;
    std::memcpy(&at10, blob.data() + 10, 4);
    std::memcpy(&at26, blob.data() + 26, 4);
    EXPECT_EQ(at10, 31.0f);
    EXPECT_EQ(at26, 250.0f);
    EXPECT_DOUBLE_EQ(back.cpu_percent, 55.5);
    EXPECT_DOUBLE_EQ(back.memory_used_bytes, 31 * kGiB);
    EXPECT_DOUBLE_EQ(back.job_rss_bytes, 12.5 * kGiB);
    EXPECT_DOUBLE_EQ(*back.disk_read_bytes_per_second, 250e6);
    EXPECT_DOUBLE_EQ(*back.disk_write_bytes_per_second, 3.5e6);
    EXPECT_DOUBLE_EQ(*back.gpus[3].power_watts, 655.5);
    EXPECT_DOUBLE_EQ(*back.gpus[3].temperature_celsius, 81);
    EXPECT_DOUBLE_EQ(*back.gpus[3].sm_clock_mhz, 1410);
    EXPECT_EQ(back.gpus[3].throttle_reasons, 1u << 5);
    EXPECT_EQ(back.gpus[4].throttle_reasons, 0u);
    EXPECT_FALSE(back.gpus[0].throttle_reasons.has_value());
    EXPECT_FALSE(back.gpus[0].power_watts.has_value());
    // Versions 2 (before power, temperature, clock and reasons) and 1 (before disk rates): the
    // same figures without the newer fields, still read; those are "not recorded".
    std::string host = blob.substr(2, 8 * 4), gpus2;
    for (std::size_t g = 0; g < 8; ++g) gpus2 += blob.substr(2 + 8 * 4 + g * 27, 13);
    const std::string v2 = std::string("\x02") + blob.substr(1, 1) + host + gpus2;
    ASSERT_TRUE(unpack_sample(v2, back));
    EXPECT_DOUBLE_EQ(*back.disk_read_bytes_per_second, 250e6);
    EXPECT_FALSE(back.gpus[3].power_watts.has_value());
    EXPECT_FALSE(back.gpus[3].throttle_reasons.has_value());
    EXPECT_DOUBLE_EQ(back.gpus[2].memory_used_bytes, 70.25 * kGiB);
    const std::string v1 = std::string("\x01") + blob.substr(1, 1) + host.substr(0, 6 * 4) + gpus2;
    ASSERT_TRUE(unpack_sample(v1, back));
    EXPECT_DOUBLE_EQ(back.job_rss_bytes, 12.5 * kGiB);
    EXPECT_FALSE(back.disk_read_bytes_per_second.has_value());  // not recorded
    EXPECT_DOUBLE_EQ(back.gpus[2].memory_used_bytes, 70.25 * kGiB);
    EXPECT_FALSE(unpack_sample("", back));
    EXPECT_FALSE(unpack_sample(blob.substr(0, blob.size() - 1), back));       // truncated
    EXPECT_FALSE(unpack_sample(std::string("\x04") + blob.substr(1), back));  // unknown version
    EXPECT_FALSE(unpack_sample(blob + "x", back));                            // trailing bytes
    EXPECT_FALSE(unpack_sample(v2.substr(0, v2.size() - 3), back));
}

TEST(History, NewerSchemaAndPrune) {
    test::TempDir d;
    const std::string path = d.path() + "/baton.db";
    {
        auto h = History::open(path);
        auto old_run = h->run_writes().begin_run("old", "[]", "/", "box", 1000);
        ASSERT_TRUE(h->run_writes().finish_run(*old_run, 2000, 0, "{}").ok());
        auto new_run = h->run_writes().begin_run("new", "[]", "/", "box", 90000);
        ASSERT_TRUE(h->run_writes().finish_run(*new_run, 95000, 1, "{}").ok());
        auto pruned = h->run_reads().prune(50000);
        ASSERT_TRUE(pruned.ok());
        EXPECT_EQ(*pruned, 1);
        auto runs = h->run_reads().runs();
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

TEST(History, MachineAndStepsRoundTrip) {
    test::TempDir d;
    auto h = History::open(d.path() + "/baton.db");
    ASSERT_TRUE(h.ok());
    auto run = h->run_writes().begin_run("train", "[]", "/", "box", 1000);
    ASSERT_TRUE(h->run_writes()
                    .set_machine(*run, 16, 128ull << 30,
                                 {{0, "GPU-a", "NVIDIA H200", 141ull << 30}, {1, "GPU-b", "NVIDIA H200", 141ull << 30}})
                    .ok());
    StepEvent e;
    e.t_ms = 1500;
    e.pid = 4242;
    e.step = 7;
    e.step_ms = 104.5;
    e.wait_ms = 61.25;
    e.samples = 256;
    e.data = R"({"allocated_bytes":1024})";
    ASSERT_TRUE(h->run_writes().add_step(*run, e).ok());
    e.t_ms = 1400;  // an earlier step of rank 1 arrives later: read back in time order
    e.rank = 1;
    e.samples.reset();
    e.data.clear();
    ASSERT_TRUE(h->run_writes().add_step(*run, e).ok());
    const RunRecord r = (*h->run_reads().runs())[0];
    EXPECT_EQ(r.cpu_count, 16u);
    EXPECT_EQ(r.memory_total_bytes, 128ull << 30);
    ASSERT_EQ(r.gpus.size(), 2u);
    EXPECT_EQ(r.gpus[1].uuid, "GPU-b");
    EXPECT_EQ(r.gpus[1].name, "NVIDIA H200");
    EXPECT_EQ(r.gpus[1].memory_total_bytes, 141ull << 30);
    auto steps = h->run_reads().steps(*run);
    ASSERT_TRUE(steps.ok());
    ASSERT_EQ(steps->size(), 2u);
    EXPECT_EQ((*steps)[0].rank, 1);
    EXPECT_FALSE((*steps)[0].samples.has_value());
    EXPECT_EQ((*steps)[1].step, 7);
    EXPECT_EQ((*steps)[1].pid, 4242u);
    EXPECT_DOUBLE_EQ((*steps)[1].wait_ms, 61.25);
    EXPECT_EQ((*steps)[1].samples, 256);
    EXPECT_EQ((*steps)[1].data, R"({"allocated_bytes":1024})");
    // Deleting the run deletes its machine and steps too.
    ASSERT_TRUE(h->run_writes().finish_run(*run, 2000, 0, "").ok());
    EXPECT_EQ(*h->run_reads().prune(1'000'000), 1);
    EXPECT_TRUE(h->run_reads().steps(*run)->empty());
}

TEST(History, HangVerdictsRoundTripAndGoWithTheirRun) {
    test::TempDir d;
    auto h = History::open(d.path() + "/baton.db");
    ASSERT_TRUE(h.ok());
    auto run = h->run_writes().begin_run("train", "[]", "/", "box", 1000);
    ASSERT_TRUE(h->run_writes().add_hang(*run, 5000, "rank_desync", "later\n  ranks 0, 1:\n").ok());
    ASSERT_TRUE(h->run_writes().add_hang(*run, 4000, "rank_hang", "first").ok());
    auto hangs = h->run_reads().hangs(*run);
    ASSERT_TRUE(hangs.ok());
    ASSERT_EQ(hangs->size(), 2u);
    EXPECT_EQ((*hangs)[0].rule, "rank_hang") << "in time order";
    EXPECT_EQ((*hangs)[1].text, "later\n  ranks 0, 1:\n");
    auto stored = h->run_reads().load_run(*run);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->hangs.size(), 2u);
    ASSERT_TRUE(h->run_writes().finish_run(*run, 6000, 124, "").ok());
    EXPECT_EQ(*h->run_reads().prune(1'000'000), 1);
    EXPECT_TRUE(h->run_reads().hangs(*run)->empty());
}

TEST(History, ProfilesRoundTripWithTheirBytesAndGoWithTheirRun) {
    test::TempDir d;
    auto h = History::open(d.path() + "/baton.db");
    ASSERT_TRUE(h.ok());
    auto run = h->run_writes().begin_run("train", "[]", "/", "box", 1000);
    const std::string bytes("\x1f\x8b\x08\0binary\0with nul", 20);
    ASSERT_TRUE(h->run_writes().add_profile(*run, {3000, 0, 5, bytes}).ok());
    ASSERT_TRUE(h->run_writes().add_profile(*run, {2000, 1, 4, "x"}).ok());
    auto p = h->run_reads().profiles(*run);
    ASSERT_TRUE(p.ok());
    ASSERT_EQ(p->size(), 2u);
    EXPECT_EQ((*p)[0].rank, 1) << "in time order";
    EXPECT_EQ((*p)[1].steps, 5);
    EXPECT_EQ((*p)[1].trace_gz, bytes) << "every byte, NULs too";
    ASSERT_TRUE(h->run_writes().finish_run(*run, 6000, 0, "").ok());
    EXPECT_EQ(*h->run_reads().prune(1'000'000), 1);
    EXPECT_TRUE(h->run_reads().profiles(*run)->empty());
}

TEST(History, ASchemaOneDatabaseIsMigrated) {
    // The database as the first release wrote it (schema 1, version-1 sample blobs).
    test::TempDir d;
    const std::string path = d.path() + "/old.db";
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
        const char* schema1 =
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, command TEXT NOT NULL, cwd TEXT NOT "
            "NULL, host TEXT NOT NULL, owner_pid INTEGER NOT NULL, start_ms INTEGER NOT NULL, end_ms INTEGER, "
            "exit_status INTEGER, state TEXT NOT NULL CHECK (state IN ('running', 'finished', 'interrupted')), "
            "summary TEXT);"
            "CREATE TABLE samples (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, t_ms INTEGER NOT "
            "NULL, data BLOB NOT NULL, PRIMARY KEY (run_id, t_ms)) WITHOUT ROWID;"
            "CREATE TABLE findings (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, t_ms INTEGER NOT "
            "NULL, rule TEXT NOT NULL, severity TEXT NOT NULL, subject TEXT NOT NULL, summary TEXT NOT NULL, "
            "recommendation TEXT NOT NULL);"
            "CREATE INDEX findings_run ON findings(run_id);"
            "INSERT INTO runs VALUES (1, 'old', '[]', '/', 'box', 1, 1000, 2000, 0, 'finished', 'done');"
            "INSERT INTO samples VALUES (1, 1500, X'0100000060420000803F0000F841000000000000000000004841');"
            "PRAGMA user_version=1;";
        ASSERT_EQ(sqlite3_exec(db, schema1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
        sqlite3_close(db);
    }
    auto h = History::open(path);
    ASSERT_TRUE(h.ok()) << h.error().message;
    auto runs = h->run_reads().runs();
    ASSERT_TRUE(runs.ok()) << runs.error().message;
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_FALSE((*runs)[0].cpu_count.has_value());
    EXPECT_TRUE((*runs)[0].gpus.empty());
    auto s = h->run_reads().samples(1);
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_EQ(s->size(), 1u);
    EXPECT_FLOAT_EQ((*s)[0].cpu_percent, 56.0f);
    EXPECT_FLOAT_EQ((*s)[0].iowait_percent, 1.0f);
    EXPECT_DOUBLE_EQ((*s)[0].memory_used_bytes, 31 * kGiB);
    EXPECT_DOUBLE_EQ((*s)[0].job_rss_bytes, 12.5 * kGiB);
    EXPECT_FALSE((*s)[0].disk_read_bytes_per_second.has_value());
    EXPECT_TRUE(h->run_reads().steps(1)->empty());  // the new tables exist
    ASSERT_TRUE(h->queue_jobs().jobs().ok());
    EXPECT_TRUE(h->queue_jobs().jobs()->empty());
    EXPECT_EQ(h->integrity(), "ok");
}

TEST(History, AnHourAtHalfASecondWithFourGpusStaysSmall) {
    test::TempDir d;
    const std::string path = d.path() + "/baton.db";
    {
        auto h = History::open(path);
        auto run = h->run_writes().begin_run("hour", "[]", "/", "box", 0);
        for (int i = 0; i < 7200; ++i) ASSERT_TRUE(h->run_writes().add_sample(*run, sample(i * 500, 4)).ok());
        ASSERT_TRUE(h->run_writes().finish_run(*run, 3600000, 0, "{}").ok());
    }
    { auto reopened = History::open(path); }  // the last connection's close checkpoints the WAL
    std::uintmax_t bytes = std::filesystem::file_size(path);
    if (std::filesystem::exists(path + "-wal")) bytes += std::filesystem::file_size(path + "-wal");
    RecordProperty("bytes", static_cast<int>(bytes));
    EXPECT_LT(bytes, 20u << 20) << bytes;
    std::printf("one hour, 0.5 s, 4 GPUs: %.2f MB\n", static_cast<double>(bytes) / 1e6);
}

TEST(History, StateGoesBesideTheDatabaseAndRunIdsAreDigits) {
    EXPECT_EQ(History::beside("/home/u/.local/state/baton/baton.db", "agent.log"),
              "/home/u/.local/state/baton/agent.log");
    EXPECT_EQ(History::beside("/srv/b.db", "jobs"), "/srv/jobs");
    EXPECT_EQ(History::beside("baton.db", "launch"), "launch");  // no directory: the current one
    EXPECT_EQ(*parse_run_id("12"), 12);
    for (const char* bad : {"", "-1", "1e3", "abc", "1234567890123456789"}) {
        Result<std::int64_t> id = parse_run_id(bad);
        ASSERT_FALSE(id.ok()) << bad;
        EXPECT_TRUE(id.error().is(ErrorCode::not_found));
        EXPECT_EQ(id.error().message, std::string("no run '") + bad + "' (baton runs lists the runs)");
    }
}
