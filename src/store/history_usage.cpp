// baton usage's records in the history database (schema 13): one row per job and stretch of time
// (the agent starts a new stretch each hour, so `--since` clips at an hour), written by the agent's
// sampling thread, read by the queue thread for `baton usage` and by `baton usage --db`.
#include <algorithm>
#include <cmath>

#include "store/history.hpp"
#include "store/history_usage.hpp"
#include "store/sqlite_statement.hpp"

namespace baton::store {

using sqlite::db_error;
using sqlite::Statement;

namespace {

constexpr const char* kUsageColumns =
    "label, start_ms, end_ms, kind, job, name, user, ended, seconds, gpus, gpu_seconds, gpu_busy_seconds, "
    "sm_seconds, sm_busy_seconds, gpu_memory_peak_bytes, gpu_memory_total_bytes, cpus, cpu_seconds_allocated, "
    "cpu_seconds, memory_peak_bytes, memory_allocated_bytes";

void bind_text(sqlite3_stmt* st, int i, const std::string& s) {
    sqlite3_bind_text(st, i, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

// Counters read back as unsigned: a negative or absurd value (a file edited by hand) reads as 0.
std::uint64_t usage_bytes(const sqlite::Row& row, int col) {
    return static_cast<std::uint64_t>(std::max<std::int64_t>(0, row.int64(col)));
}

// Seconds read back: a negative, infinite or NaN figure (a file edited by hand) reads as 0.
double usage_seconds(const sqlite::Row& row, int col) {
    const double v = row.real(col);
    return std::isfinite(v) && v > 0 ? v : 0;
}

}  // namespace

Status UsageTable::put_usage(const std::vector<UsageRecord>& rows) {
    if (rows.empty()) return Ok{};
    if (Status s = exec("BEGIN IMMEDIATE"); !s.ok()) return s;
    const std::string sql = std::string("INSERT OR REPLACE INTO usage (") + kUsageColumns +
                            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    Statement st(db_, sql.c_str());
    auto fail = [&] {
        Error e = db_error(db_, "cannot record the usage");
        rollback();
        return e;
    };
    if (!st.ok()) return fail();
    for (const UsageRecord& r : rows) {
        sqlite3_reset(st.get());
        sqlite3_stmt* s = st.get();
        bind_text(s, 1, r.label);
        sqlite3_bind_int64(s, 2, r.start_ms);
        sqlite3_bind_int64(s, 3, r.end_ms);
        bind_text(s, 4, r.kind);
        bind_text(s, 5, r.job);
        bind_text(s, 6, r.name);
        bind_text(s, 7, r.user);
        sqlite3_bind_int(s, 8, r.ended ? 1 : 0);
        sqlite3_bind_double(s, 9, r.seconds);
        sqlite3_bind_int64(s, 10, r.gpus);
        sqlite3_bind_double(s, 11, r.gpu_seconds);
        sqlite3_bind_double(s, 12, r.gpu_busy_seconds);
        sqlite3_bind_double(s, 13, r.sm_seconds);
        sqlite3_bind_double(s, 14, r.sm_busy_seconds);
        sqlite3_bind_int64(s, 15, static_cast<std::int64_t>(r.gpu_memory_peak_bytes));
        sqlite3_bind_int64(s, 16, static_cast<std::int64_t>(r.gpu_memory_total_bytes));
        if (r.cpus)
            sqlite3_bind_int64(s, 17, *r.cpus);
        else
            sqlite3_bind_null(s, 17);
        sqlite3_bind_double(s, 18, r.cpu_seconds_allocated);
        sqlite3_bind_double(s, 19, r.cpu_seconds);
        sqlite3_bind_int64(s, 20, static_cast<std::int64_t>(r.memory_peak_bytes));
        if (r.memory_allocated_bytes)
            sqlite3_bind_int64(s, 21, static_cast<std::int64_t>(*r.memory_allocated_bytes));
        else
            sqlite3_bind_null(s, 21);
        if (sqlite3_step(s) != SQLITE_DONE) return fail();
    }
    if (Status s = exec("COMMIT"); !s.ok()) {
        rollback();
        return s;
    }
    return Ok{};
}

Result<std::vector<UsageRecord>> UsageTable::usage(std::int64_t since_ms) {
    const std::string sql =
        std::string("SELECT ") + kUsageColumns + " FROM usage WHERE end_ms >= ? ORDER BY start_ms, label";
    Statement st(db_, sql.c_str());
    if (!st.ok()) return read_error("cannot read the usage");
    sqlite3_bind_int64(st.get(), 1, since_ms);
    std::vector<UsageRecord> out;
    const sqlite::Walk walk = sqlite::each_row(st, [&](const sqlite::Row& row) {
        UsageRecord r;
        r.label = row.text(0);
        r.start_ms = row.int64(1);
        r.end_ms = row.int64(2);
        r.kind = row.text(3);
        r.job = row.text(4);
        r.name = row.text(5);
        r.user = row.text(6);
        r.ended = row.int64(7) != 0;
        r.seconds = usage_seconds(row, 8);
        r.gpus = static_cast<unsigned>(std::min<std::uint64_t>(usage_bytes(row, 9), 1u << 20));
        r.gpu_seconds = usage_seconds(row, 10);
        r.gpu_busy_seconds = usage_seconds(row, 11);
        r.sm_seconds = usage_seconds(row, 12);
        r.sm_busy_seconds = usage_seconds(row, 13);
        r.gpu_memory_peak_bytes = usage_bytes(row, 14);
        r.gpu_memory_total_bytes = usage_bytes(row, 15);
        if (!row.null(16)) r.cpus = static_cast<unsigned>(std::min<std::uint64_t>(usage_bytes(row, 16), 1u << 20));
        r.cpu_seconds_allocated = usage_seconds(row, 17);
        r.cpu_seconds = usage_seconds(row, 18);
        r.memory_peak_bytes = usage_bytes(row, 19);
        if (!row.null(20)) r.memory_allocated_bytes = usage_bytes(row, 20);
        out.push_back(std::move(r));
    });
    if (walk != sqlite::Walk::done) return read_error("cannot read the usage");
    return out;
}

Result<std::int64_t> UsageTable::prune_usage(std::int64_t before_ms) {
    Statement st(db_, "DELETE FROM usage WHERE end_ms < ?");
    if (!st.ok()) return db_error(db_, "cannot prune the usage");
    sqlite3_bind_int64(st.get(), 1, before_ms);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot prune the usage");
    return static_cast<std::int64_t>(sqlite3_changes(db_));
}

}  // namespace baton::store
