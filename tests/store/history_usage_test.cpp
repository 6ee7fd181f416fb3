// baton usage's records: written and read back whole, replaced by (label, start), pruned; and the
// agent's cutting of a job's totals into stretches of an hour.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "store/history.hpp"
#include "store/history_usage.hpp"
#include "store/usage_records.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::store;

namespace {

UsageRecord usage_row(const std::string& label, std::int64_t start, std::int64_t end) {
    UsageRecord r;
    r.label = label;
    r.start_ms = start;
    r.end_ms = end;
    r.kind = "queue";
    r.job = label.substr(label.find(':') + 1);
    r.name = "train";
    r.user = "alice";
    r.seconds = 100.5;
    r.gpus = 2;
    r.gpu_seconds = 201;
    r.gpu_busy_seconds = 150.25;
    r.sm_seconds = 201;
    r.sm_busy_seconds = 80;
    r.gpu_memory_peak_bytes = 40ull << 30;
    r.gpu_memory_total_bytes = 80ull << 30;
    r.cpus = 8;
    r.cpu_seconds_allocated = 804;
    r.cpu_seconds = 300;
    r.memory_peak_bytes = 3ull << 30;
    r.memory_allocated_bytes = 16ull << 30;
    return r;
}

// One node's totals of a job as the tracker has them after `seconds` at `util` % on one allocated GPU.
diagnose::JobUse tracked(const std::string& label, std::int64_t first_ms, double seconds, double util, bool ended) {
    diagnose::JobUse j;
    j.label = label;
    j.kind = "queue";
    j.id = "1";
    j.user = "bob";
    j.ended = ended;
    diagnose::NodeUse n;
    n.first_unix_ms = first_ms;
    n.last_unix_ms = first_ms + static_cast<std::int64_t>(seconds * 1000);
    n.seconds = seconds;
    n.gpu_seconds = seconds;
    n.cpu_seconds = seconds / 2;
    n.cpus = 2;
    n.cpu_seconds_allocated = 2 * seconds;
    diagnose::GpuUse g;
    g.allocated = true;
    g.seconds = seconds;
    g.busy_seconds = seconds * util / 100;
    g.memory_peak_bytes = 5;
    g.memory_total_bytes = 10;
    n.gpus.push_back(g);
    j.nodes.push_back(n);
    return j;
}

void usage_sql(const std::string& path, const std::string& statement) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
}

}  // namespace

TEST(HistoryUsage, WritesReadsReplacesAndPrunes) {
    test::TempDir d;
    auto h = History::open(d.path() + "/h.db");
    ASSERT_TRUE(h.ok()) << h.error().message;
    UsageRecord a = usage_row("queue:1", 1000, 5000);
    UsageRecord b = usage_row("user:bob", 2000, 9000);
    b.kind = "user";
    b.cpus.reset();
    b.memory_allocated_bytes.reset();
    ASSERT_TRUE(h->usage_table().put_usage({a, b}).ok());
    auto got = h->usage_table().usage(0);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_EQ(got->size(), 2u);
    EXPECT_EQ((*got)[0], a);
    EXPECT_EQ((*got)[1], b);
    // Those that ended before `since` are left out.
    EXPECT_EQ(h->usage_table().usage(6000)->size(), 1u);
    // The same label and start again replaces it.
    a.end_ms = 7000;
    a.ended = true;
    ASSERT_TRUE(h->usage_table().put_usage({a}).ok());
    got = h->usage_table().usage(0);
    ASSERT_EQ(got->size(), 2u);
    EXPECT_EQ((*got)[0], a);
    auto pruned = h->usage_table().prune_usage(8000);
    ASSERT_TRUE(pruned.ok());
    EXPECT_EQ(*pruned, 1);
    EXPECT_EQ(h->usage_table().usage(0)->size(), 1u);
}

TEST(UsageStretches, AJobIsWrittenWhenItChangesAndCutIntoHours) {
    UsageStretches s;
    const std::int64_t t0 = 1764400000000;
    // 30 minutes in: one record, from its first sample.
    auto rows = s.take({tracked("queue:1", t0, 1800, 50, false)}, t0 + 1800000, false);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].start_ms, t0);
    EXPECT_DOUBLE_EQ(rows[0].gpu_seconds, 1800);
    EXPECT_DOUBLE_EQ(rows[0].gpu_busy_seconds, 900);
    EXPECT_EQ(rows[0].gpus, 1u);
    EXPECT_EQ(rows[0].cpus, 2u);
    // Nothing changed: nothing to write.
    EXPECT_TRUE(s.take({tracked("queue:1", t0, 1800, 50, false)}, t0 + 1860000, false).empty());
    // An hour in: the same stretch, now closed.
    rows = s.take({tracked("queue:1", t0, 3600, 50, false)}, t0 + 3600000, false);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].start_ms, t0);
    EXPECT_DOUBLE_EQ(rows[0].gpu_seconds, 3600);
    // Its next record is the next stretch: only what came after.
    rows = s.take({tracked("queue:1", t0, 4000, 50, false)}, t0 + 4000000, false);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].start_ms, t0 + 3600000);
    EXPECT_DOUBLE_EQ(rows[0].gpu_seconds, 400);
    EXPECT_DOUBLE_EQ(rows[0].gpu_busy_seconds, 200);
    EXPECT_DOUBLE_EQ(rows[0].cpu_seconds, 200);
    EXPECT_DOUBLE_EQ(rows[0].cpu_seconds_allocated, 800);
    // Between minutes, only a job that left is written.
    EXPECT_TRUE(s.take({tracked("queue:1", t0, 4010, 50, false)}, t0 + 4010000, true).empty());
    rows = s.take({tracked("queue:1", t0, 4020, 50, true)}, t0 + 4020000, true);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_TRUE(rows[0].ended);
    EXPECT_DOUBLE_EQ(rows[0].gpu_seconds, 420);
    // The tracker forgot it and saw a job of the same label anew: a new job, counted from zero.
    rows = s.take({tracked("queue:1", t0 + 9000000, 10, 100, false)}, t0 + 9010000, false);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].start_ms, t0 + 9000000);
    EXPECT_DOUBLE_EQ(rows[0].gpu_busy_seconds, 10);
}

TEST(UsageStretches, TheStretchUnderWayIsLiveOverTheWrittenOne) {
    UsageStretches s;
    const std::int64_t t0 = 1764400000000;
    // Never written: its stretch from its first sample.
    auto live = s.current({tracked("queue:1", t0, 30, 50, false)});
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].start_ms, t0);
    EXPECT_DOUBLE_EQ(live[0].gpu_seconds, 30);
    const auto written = s.take({tracked("queue:1", t0, 3600, 50, false)}, t0 + 3600000, false);  // closed
    // Ten minutes into its second hour: the live stretch is the second one alone; the first stays written.
    live = s.current({tracked("queue:1", t0, 4200, 50, false)});
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].start_ms, t0 + 3600000);
    EXPECT_DOUBLE_EQ(live[0].gpu_seconds, 600);
    // current() changed nothing: the next take writes the same.
    const auto next = s.take({tracked("queue:1", t0, 4200, 50, false)}, t0 + 4200000, false);
    ASSERT_EQ(next.size(), 1u);
    EXPECT_EQ(next[0], live[0]);
    // Over what was written a minute ago, the live record replaces its own stretch only.
    UsageRecord stale = next[0];
    stale.gpu_seconds = 540;
    auto merged = with_newer_stretches({written[0], stale}, live);
    ASSERT_EQ(merged.size(), 2u);
    EXPECT_DOUBLE_EQ(usage_by_job(merged)[0].gpu_seconds, 3600 + 600);
}

TEST(HistoryUsage, AFileEditedByHandReadsAsFiguresARecordCanHold) {
    test::TempDir d;
    const std::string path = d.path() + "/h.db";
    {
        auto h = History::open(path);
        ASSERT_TRUE(h.ok());
        ASSERT_TRUE(h->usage_table().put_usage({usage_row("queue:1", 1000, 5000)}).ok());
    }
    usage_sql(path,
              "UPDATE usage SET seconds = -5, gpu_seconds = 9e999, gpu_busy_seconds = 'x', gpus = -3, "
              "memory_peak_bytes = -1, cpus = 99999999999");
    auto h = History::open(path, HistoryAccess::read);
    ASSERT_TRUE(h.ok());
    auto got = h->usage_table().usage(0);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_EQ(got->size(), 1u);
    const UsageRecord& r = (*got)[0];
    EXPECT_EQ(r.seconds, 0);
    EXPECT_EQ(r.gpu_seconds, 0);
    EXPECT_EQ(r.gpu_busy_seconds, 0);
    EXPECT_EQ(r.gpus, 0u);
    EXPECT_EQ(r.memory_peak_bytes, 0u);
    EXPECT_EQ(r.cpus, 1u << 20);
    auto back = parse_usage_json(usage_json(r));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, r);
}

TEST(UsageStretches, AContainerThatNeverHeldAGpuIsNotCounted) {
    UsageStretches s;
    const std::int64_t t0 = 1764400000000;
    diagnose::JobUse db = tracked("container:5f3a", t0, 60, 0, false);
    db.kind = "container";
    db.nodes[0].gpus.clear();
    db.nodes[0].cpus.reset();
    diagnose::JobUse cpu_job = db;  // a queued job without GPUs counts (its CPUs)
    cpu_job.label = "queue:9";
    cpu_job.kind = "queue";
    EXPECT_EQ(s.take({db, cpu_job}, t0 + 60000, false).size(), 1u);
    EXPECT_EQ(s.current({db, cpu_job}).size(), 1u);
    EXPECT_EQ(s.current({db, cpu_job})[0].label, "queue:9");
    // Once it holds one, it counts.
    db.nodes[0].gpus.push_back({});
    EXPECT_EQ(s.current({db}).size(), 1u);
}
