// Benches in the history (schema 7): a bench is a run of kind "bench", recorded whole when it is
// done, with one row per link it measured, so `baton runs` lists it and `baton compare` sets two
// benches side by side link by link (before and after a driver update, a BIOS change).
#include "store/history.hpp"
#include "store/history_bench.hpp"
#include "store/run_owner.hpp"
#include "store/sqlite_statement.hpp"

namespace baton::store {

using sqlite::db_error;
using sqlite::Statement;

namespace {

void bind_optional(sqlite3_stmt* st, int col, const std::optional<double>& v) {
    if (v)
        sqlite3_bind_double(st, col, *v);
    else
        sqlite3_bind_null(st, col);
}

}  // namespace

Result<std::int64_t> BenchTable::record_bench(const std::string& name, const std::string& command,
                                              const std::string& cwd, const std::string& host, std::int64_t start_ms,
                                              std::int64_t end_ms, const std::string& report,
                                              const std::vector<BenchLinkRecord>& links) {
    if (Status s = exec("BEGIN IMMEDIATE"); !s.ok()) return s.error();
    auto fail = [&](const char* what) {
        Error e = db_error(db_, what);
        rollback();
        return e;
    };
    Statement run(db_,
                  "INSERT INTO runs (name, command, cwd, host, owner_pid, start_ms, end_ms, exit_status, state, "
                  "summary, owner_start_ticks, owner_boot_id, kind) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, 0, 'finished', ?, ?, ?, 'bench')");
    if (!run.ok()) return fail("cannot record the bench");
    const RunOwner owner = current_owner();
    sqlite3_bind_text(run.get(), 1, name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(run.get(), 2, command.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(run.get(), 3, cwd.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(run.get(), 4, host.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(run.get(), 5, owner.pid);
    sqlite3_bind_int64(run.get(), 6, start_ms);
    sqlite3_bind_int64(run.get(), 7, end_ms);
    sqlite3_bind_text(run.get(), 8, report.c_str(), -1, SQLITE_TRANSIENT);
    if (owner.start_ticks)
        sqlite3_bind_int64(run.get(), 9, static_cast<sqlite3_int64>(*owner.start_ticks));
    else
        sqlite3_bind_null(run.get(), 9);
    sqlite3_bind_text(run.get(), 10, owner.boot_id.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(run.get()) != SQLITE_DONE) return fail("cannot record the bench");
    const std::int64_t id = sqlite3_last_insert_rowid(db_);
    Statement link(db_,
                   "INSERT INTO bench_links (run_id, seq, bench, link, measured, peak, peak_source, need, verdict, "
                   "detail, unit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!link.ok()) return fail("cannot record the bench's links");
    int seq = 0;
    for (const BenchLinkRecord& l : links) {
        sqlite3_reset(link.get());
        sqlite3_bind_int64(link.get(), 1, id);
        sqlite3_bind_int(link.get(), 2, seq++);
        sqlite3_bind_text(link.get(), 3, l.bench.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(link.get(), 4, l.link.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(link.get(), 5, l.measured);
        bind_optional(link.get(), 6, l.peak);
        sqlite3_bind_text(link.get(), 7, l.peak_source.c_str(), -1, SQLITE_TRANSIENT);
        bind_optional(link.get(), 8, l.need);
        sqlite3_bind_text(link.get(), 9, l.verdict.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(link.get(), 10, l.detail.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(link.get(), 11, l.unit.c_str(), -1, SQLITE_TRANSIENT);
        if (sqlite3_step(link.get()) != SQLITE_DONE) return fail("cannot record the bench's links");
    }
    if (Status s = exec("COMMIT"); !s.ok()) return s.error();
    return id;
}

Result<std::vector<BenchLinkRecord>> BenchTable::bench_links(std::int64_t run) {
    Statement st(db_,
                 "SELECT bench, link, measured, peak, peak_source, need, verdict, detail, unit FROM bench_links "
                 "WHERE run_id = ? ORDER BY seq");
    const std::string what = "cannot read the links of bench " + std::to_string(run);
    if (!st.ok()) return read_error(what);
    sqlite3_bind_int64(st.get(), 1, run);
    std::vector<BenchLinkRecord> out;
    const sqlite::Walk walk = sqlite::each_row(st, [&](const sqlite::Row& row) {
        BenchLinkRecord l;
        l.bench = row.text(0);
        l.link = row.text(1);
        l.measured = row.real(2);
        l.peak = row.maybe_real(3);
        l.peak_source = row.text(4);
        l.need = row.maybe_real(5);
        l.verdict = row.text(6);
        l.detail = row.text(7);
        l.unit = row.text(8);
        out.push_back(std::move(l));
    });
    if (walk != sqlite::Walk::done) return read_error(what);
    return out;
}

}  // namespace baton::store
