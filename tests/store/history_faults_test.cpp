// The history under faults: a damaged file is an error, never an empty table; two openers of a new
// database migrate it once; readers open read-only; the owner of a run is its pid with the pid's
// start time and boot, so a reused pid is no owner; files are private.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <sqlite3.h>

#include "store/history.hpp"
#include "store/history_runs.hpp"
#include "store/run_owner.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::store;

namespace {

// A run with enough findings, samples and steps that each table spans several pages.
std::int64_t record_big_run(const std::string& path) {
    auto h = History::open(path);
    EXPECT_TRUE(h.ok());
    auto run = h->run_writes().begin_run("big", "python train.py", "/", "box", 1000);
    diagnose::Finding f;
    f.rule = "input_bound";
    f.severity = diagnose::Severity::warning;
    f.subject = "job";
    f.summary = std::string(200, 's');
    f.recommendation = std::string(200, 'r');
    std::vector<StepEvent> steps;
    for (int i = 0; i < 400; ++i) {
        EXPECT_TRUE(h->run_writes().add_finding(*run, 1000 + i, f).ok());
        RunSample s;
        s.t_ms = 1000 + i;
        s.gpus.resize(4);
        EXPECT_TRUE(h->run_writes().add_sample(*run, s).ok());
        StepEvent e;
        e.t_ms = 1000 + i;
        e.step = i;
        e.data = std::string(100, 'd');
        steps.push_back(e);
    }
    EXPECT_TRUE(h->run_writes().add_steps(*run, steps).ok());
    EXPECT_TRUE(h->run_writes().finish_run(*run, 5000, 0, "done").ok());
    return *run;
}

void sql(const std::string& path, const std::string& statement) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
}

}  // namespace

TEST(HistoryFaults, ADamagedTableIsAnErrorNotAnEmptyOne) {
    for (const std::string table : {"findings", "samples", "steps"}) {
        SCOPED_TRACE(table);
        test::TempDir d;
        const std::string path = d.path() + "/baton.db";
        const std::int64_t run = record_big_run(path);
        ASSERT_TRUE(test::corrupt_table_root(path, table));
        auto h = History::open(path, HistoryAccess::read);
        ASSERT_TRUE(h.ok()) << h.error().message;
        Status read = Ok{};
        if (table == "findings") {
            auto r = h->run_reads().findings(run);
            if (!r.ok()) read = r.error();
        } else if (table == "samples") {
            auto r = h->run_reads().samples(run);
            if (!r.ok()) read = r.error();
        } else {
            auto r = h->run_reads().steps(run);
            if (!r.ok()) read = r.error();
        }
        ASSERT_FALSE(read.ok());
        EXPECT_NE(read.error().message.find(path), std::string::npos) << read.error().message;
        EXPECT_NE(read.error().message.find("damaged"), std::string::npos) << read.error().message;
        EXPECT_NE(read.error().message.find("of run 1"), std::string::npos) << read.error().message;
        EXPECT_FALSE(h->run_reads().load_run(run).ok());
    }
}

TEST(HistoryFaults, ConcurrentOpenersOfANewDatabaseMigrateItOnce) {
    // Ten processes open the same new database at once, thirty times over.
    for (int trial = 0; trial < 30; ++trial) {
        test::TempDir d;
        const std::string path = d.path() + "/new/baton.db";
        std::vector<pid_t> kids;
        for (int i = 0; i < 10; ++i) {
            const pid_t pid = fork();
            if (pid == 0) {
                auto h = History::open(path);
                if (!h.ok()) {
                    std::fprintf(stderr, "%s\n", h.error().message.c_str());
                    _exit(1);
                }
                _exit(h->run_writes().begin_run("r", "c", "/", "h", 1).ok() ? 0 : 2);
            }
            kids.push_back(pid);
        }
        int failed = 0;
        for (pid_t k : kids) {
            int st = 0;
            waitpid(k, &st, 0);
            failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        ASSERT_EQ(failed, 0) << "trial " << trial;
        auto h = History::open(path, HistoryAccess::read);
        ASSERT_TRUE(h.ok());
        EXPECT_EQ(h->run_reads().runs()->size(), 10u);
    }
}

TEST(HistoryFaults, ReadersOpenReadOnly) {
    test::TempDir d;
    const std::string path = d.path() + "/baton.db";
    record_big_run(path);
    auto r = History::open(path, HistoryAccess::read);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->run_reads().runs()->size(), 1u);
    EXPECT_FALSE(r->run_writes().begin_run("x", "y", "/", "h", 1).ok());  // a reader cannot write
    // Not a history: an empty file, garbage, a missing file (never created by a reader).
    d.write("empty.db", "");
    auto empty = History::open(d.path() + "/empty.db", HistoryAccess::read);
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.error().message.find("not a baton history"), std::string::npos) << empty.error().message;
    d.write("garbage.db", std::string(8192, 'g'));
    auto garbage = History::open(d.path() + "/garbage.db", HistoryAccess::read);
    ASSERT_FALSE(garbage.ok());
    EXPECT_NE(garbage.error().message.find("garbage.db"), std::string::npos) << garbage.error().message;
    EXPECT_FALSE(History::open(d.path() + "/missing.db", HistoryAccess::read).ok());
    // A schema number no baton wrote (negative: found by fuzz_history, whose negation overflowed).
    for (const char* v : {"-2147483648", "-1"}) {
        test::TempDir e;
        sql(e.path() + "/odd.db", std::string("PRAGMA user_version=") + v);
        for (HistoryAccess a : {HistoryAccess::read, HistoryAccess::manage}) {
            auto odd = History::open(e.path() + "/odd.db", a);
            ASSERT_FALSE(odd.ok());
            EXPECT_NE(odd.error().message.find(std::string("not a baton history (schema ") + v + ")"),
                      std::string::npos)
                << odd.error().message;
        }
    }
    EXPECT_FALSE(std::filesystem::exists(d.path() + "/missing.db"));
    // A database of an older schema is upgraded once, then read.
    sql(path,
        "DROP TABLE tunings; DROP TABLE run_oom_captures; DROP TABLE run_profiles; DROP TABLE run_hangs; DROP TABLE "
        "bench_links; ALTER "
        "TABLE runs DROP COLUMN kind; "
        "DROP TABLE usage; DROP TABLE job_groups; DROP TABLE jobs; DROP TABLE metric_minutes; DROP TABLE "
        "metric_series; "
        "ALTER TABLE runs DROP COLUMN energy; ALTER TABLE runs DROP COLUMN owner_boot_id; ALTER TABLE runs DROP COLUMN "
        "owner_start_ticks; "
        "PRAGMA user_version=3");
    auto old = History::open(path, HistoryAccess::read);
    ASSERT_TRUE(old.ok()) << old.error().message;
    EXPECT_EQ(old->run_reads().runs()->size(), 1u);
}

TEST(HistoryFaults, FilesArePrivate) {
    test::TempDir d;
    const std::string path = d.path() + "/state/baton/baton.db";
    ASSERT_TRUE(History::open(path).ok());
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(stat((d.path() + "/state/baton").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(stat((d.path() + "/state").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    // A directory that was there keeps its mode.
    ASSERT_EQ(stat(d.path().c_str(), &st), 0);
    const mode_t before = st.st_mode;
    ASSERT_TRUE(History::open(d.path() + "/other.db").ok());
    ASSERT_EQ(stat(d.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode, before);
}

TEST(HistoryFaults, AReusedPidIsNoOwner) {
    test::TempDir d;
    const std::string path = d.path() + "/baton.db";
    std::int64_t run = 0;
    {
        auto h = History::open(path);
        run = *h->run_writes().begin_run("mine", "c", "/", "h", 1);
    }
    auto state = [&] { return (*History::open(path, HistoryAccess::read)->run_reads().runs())[0].state; };
    EXPECT_EQ(state(), RunState::running);  // this process, alive
    // Another process now holds the recorded pid (a child of ours, alive, started later).
    const pid_t kid = fork();
    if (kid == 0) {
        pause();
        _exit(0);
    }
    const std::optional<std::uint64_t> kid_start = process_start_ticks(kid);
    ASSERT_TRUE(kid_start.has_value());
    sql(path, "UPDATE runs SET owner_pid = " + std::to_string(kid) +
                  ", owner_start_ticks = " + std::to_string(*kid_start) + " WHERE id = " + std::to_string(run));
    EXPECT_EQ(state(), RunState::running);  // the same process: alive
    sql(path, "UPDATE runs SET owner_start_ticks = " + std::to_string(*kid_start + 100));
    EXPECT_EQ(state(), RunState::interrupted);  // the pid is alive but another process holds it
    sql(path, "UPDATE runs SET owner_start_ticks = " + std::to_string(*kid_start) + ", owner_boot_id = 'another-boot'");
    EXPECT_EQ(state(), RunState::interrupted);  // recorded before a reboot
    kill(kid, SIGKILL);
    waitpid(kid, nullptr, 0);
    // Hostile pids are never signalled as groups or "every process".
    for (const char* pid : {"-1", "0", "-4242", "9223372036854775807"}) {
        sql(path, std::string("UPDATE runs SET owner_pid = ") + pid + ", owner_boot_id = NULL");
        EXPECT_EQ(state(), RunState::interrupted) << pid;
    }
    // A writer marks it for good.
    { ASSERT_TRUE(History::open(path, HistoryAccess::manage).ok()); }
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT state FROM runs", -1, &st, nullptr);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "interrupted");
    sqlite3_finalize(st);
    sqlite3_close(db);
}
