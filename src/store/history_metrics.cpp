// baton serve's machine history in the history database (schema 5): one row per metric, subject
// and minute, with the minute's average, minimum and maximum. A series' name is stored once
// (metric_series) and its minutes refer to it by id, which keeps a row near 30 bytes: a box with
// 8 GPUs (about 80 series) writes about 4 MB a day (docs/performance.md).
#include <map>
#include <utility>

#include "store/history.hpp"
#include "store/history_metrics.hpp"
#include "store/sqlite_statement.hpp"

namespace baton::store {

using sqlite::db_error;
using sqlite::Statement;

Status MinuteTable::add_metric_minutes(const std::vector<MetricMinute>& rows) {
    if (rows.empty()) return Ok{};
    if (Status s = exec("BEGIN IMMEDIATE"); !s.ok()) return s;
    Statement series(db_,
                     "INSERT INTO metric_series (metric, subject) VALUES (?, ?) "
                     "ON CONFLICT (metric, subject) DO UPDATE SET metric = metric RETURNING id");
    Statement minute(db_,
                     "INSERT OR REPLACE INTO metric_minutes (series_id, minute, avg, min, max) VALUES (?, ?, ?, ?, ?)");
    auto fail = [&](const char* what) {
        Error e = db_error(db_, what);
        rollback();
        return e;
    };
    if (!series.ok() || !minute.ok()) return fail("cannot record the machine history");
    std::map<std::pair<std::string, std::string>, std::int64_t> ids;
    for (const MetricMinute& r : rows) {
        auto key = std::make_pair(r.metric, r.subject);
        auto it = ids.find(key);
        if (it == ids.end()) {
            sqlite3_reset(series.get());
            sqlite3_bind_text(series.get(), 1, r.metric.c_str(), -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(series.get(), 2, r.subject.c_str(), -1, SQLITE_TRANSIENT);
            const std::optional<std::int64_t> id =
                sqlite::first_row(series, [](const sqlite::Row& row) { return row.int64(0); });
            if (!id) return fail("cannot record the machine history");
            it = ids.emplace(key, *id).first;
            (void)sqlite::each_row(series, [](const sqlite::Row&) {});  // the upsert's RETURNING, stepped to its end
        }
        sqlite3_reset(minute.get());
        sqlite3_bind_int64(minute.get(), 1, it->second);
        sqlite3_bind_int64(minute.get(), 2, r.minute);
        sqlite3_bind_double(minute.get(), 3, r.avg);
        sqlite3_bind_double(minute.get(), 4, r.min);
        sqlite3_bind_double(minute.get(), 5, r.max);
        if (sqlite3_step(minute.get()) != SQLITE_DONE) return fail("cannot record the machine history");
    }
    if (Status s = exec("COMMIT"); !s.ok()) {
        rollback();
        return s;
    }
    return Ok{};
}

Result<std::vector<MetricMinute>> MinuteTable::metric_minutes(const std::string& metric, const std::string& subject,
                                                              std::int64_t from_minute, std::int64_t to_minute) {
    Statement st(db_,
                 "SELECT m.minute, m.avg, m.min, m.max FROM metric_minutes m JOIN metric_series s "
                 "ON s.id = m.series_id WHERE s.metric = ? AND s.subject = ? AND m.minute BETWEEN ? AND ? "
                 "ORDER BY m.minute");
    if (!st.ok()) return read_error("cannot read the machine history");
    sqlite3_bind_text(st.get(), 1, metric.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 2, subject.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st.get(), 3, from_minute);
    sqlite3_bind_int64(st.get(), 4, to_minute);
    std::vector<MetricMinute> out;
    const sqlite::Walk walk = sqlite::each_row(st, [&](const sqlite::Row& row) {
        MetricMinute m;
        m.metric = metric;
        m.subject = subject;
        m.minute = row.int64(0);
        m.avg = row.real(1);
        m.min = row.real(2);
        m.max = row.real(3);
        out.push_back(std::move(m));
    });
    if (walk != sqlite::Walk::done) return read_error("cannot read the machine history");
    return out;
}

Result<std::vector<MetricMinute>> MinuteTable::metric_series() {
    Statement st(db_, "SELECT metric, subject FROM metric_series ORDER BY metric, subject");
    if (!st.ok()) return read_error("cannot read the machine history");
    std::vector<MetricMinute> out;
    const sqlite::Walk walk = sqlite::each_row(st, [&](const sqlite::Row& row) {
        MetricMinute m;
        m.metric = row.text(0);
        m.subject = row.text(1);
        out.push_back(std::move(m));
    });
    if (walk != sqlite::Walk::done) return read_error("cannot read the machine history");
    return out;
}

Result<std::int64_t> MinuteTable::prune_metric_minutes(std::int64_t minute) {
    // Through the primary key, series by series: no second index on minute to keep up.
    Statement st(db_, "DELETE FROM metric_minutes WHERE series_id IN (SELECT id FROM metric_series) AND minute < ?");
    if (!st.ok()) return db_error(db_, "cannot prune the machine history");
    sqlite3_bind_int64(st.get(), 1, minute);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot prune the machine history");
    return static_cast<std::int64_t>(sqlite3_changes(db_));
}

}  // namespace baton::store
