// What `baton tune` found (schema 14): one row per tuning, its winner's settings for `baton run --tuned`,
// the trials it points at (runs of their own) and its whole result as JSON.
#include "store/history.hpp"
#include "store/history_tunings.hpp"
#include "store/sqlite_statement.hpp"

namespace baton::store {

using sqlite::db_error;
using sqlite::Statement;

namespace {

std::string tuning_text(sqlite3_stmt* st, int col) {
    const unsigned char* t = sqlite3_column_text(st, col);
    return t ? reinterpret_cast<const char*>(t) : "";
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string tuning_script_key(const std::vector<std::string>& argv) {
    std::string out;
    for (std::size_t i = 0; i < argv.size(); ++i) {
        out += (out.empty() ? "" : " ") + argv[i];
        if (ends_with(argv[i], ".py")) break;
        if (argv[i] == "-m" && i + 1 < argv.size()) {
            out += " " + argv[i + 1];
            break;
        }
    }
    return out;
}

Result<std::int64_t> TuningTable::add_tuning(const TuningRecord& t) {
    Statement st(db_,
                 "INSERT INTO tunings (t_ms, command, script, cwd, settings, label, gain, measure, baseline_run, "
                 "winner_run, report) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st.ok()) return db_error(db_, "cannot record the tuning");
    sqlite3_bind_int64(st.get(), 1, t.t_ms);
    sqlite3_bind_text(st.get(), 2, t.command.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 3, t.script.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 4, t.cwd.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 5, t.settings.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 6, t.label.c_str(), -1, SQLITE_TRANSIENT);
    if (t.gain)
        sqlite3_bind_double(st.get(), 7, *t.gain);
    else
        sqlite3_bind_null(st.get(), 7);
    sqlite3_bind_text(st.get(), 8, t.measure.c_str(), -1, SQLITE_TRANSIENT);
    for (auto [col, run] : {std::pair{9, t.baseline_run}, std::pair{10, t.winner_run}}) {
        if (run)
            sqlite3_bind_int64(st.get(), col, run);
        else
            sqlite3_bind_null(st.get(), col);
    }
    sqlite3_bind_text(st.get(), 11, t.report.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record the tuning");
    return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_));
}

Result<std::optional<TuningRecord>> TuningTable::latest_tuning(const std::string& command, const std::string& script,
                                                               const std::string& cwd) {
    for (const char* where : {"command = ?", "script = ?"}) {
        const std::string sql = std::string(
                                    "SELECT id, t_ms, command, script, cwd, settings, label, gain, measure, "
                                    "baseline_run, winner_run, report FROM tunings WHERE ") +
                                where + " AND cwd = ? ORDER BY t_ms DESC, id DESC LIMIT 1";
        Statement st(db_, sql.c_str());
        if (!st.ok()) return db_error(db_, "cannot read the tunings");
        const std::string& key = where[0] == 'c' ? command : script;
        sqlite3_bind_text(st.get(), 1, key.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st.get(), 2, cwd.c_str(), -1, SQLITE_TRANSIENT);
        const int rc = sqlite3_step(st.get());
        if (rc == SQLITE_DONE) continue;
        if (rc != SQLITE_ROW) return db_error(db_, "cannot read the tunings");
        TuningRecord t;
        t.id = sqlite3_column_int64(st.get(), 0);
        t.t_ms = sqlite3_column_int64(st.get(), 1);
        t.command = tuning_text(st.get(), 2);
        t.script = tuning_text(st.get(), 3);
        t.cwd = tuning_text(st.get(), 4);
        t.settings = tuning_text(st.get(), 5);
        t.label = tuning_text(st.get(), 6);
        if (sqlite3_column_type(st.get(), 7) != SQLITE_NULL) t.gain = sqlite3_column_double(st.get(), 7);
        t.measure = tuning_text(st.get(), 8);
        t.baseline_run = sqlite3_column_int64(st.get(), 9);
        t.winner_run = sqlite3_column_int64(st.get(), 10);
        t.report = tuning_text(st.get(), 11);
        return std::optional<TuningRecord>(std::move(t));
    }
    return std::optional<TuningRecord>{};
}

}  // namespace baton::store
