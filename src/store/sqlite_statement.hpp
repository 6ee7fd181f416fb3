// A prepared SQLite statement, finalised on scope exit; a result row read by column; the walk over a
// statement's rows and its first row; the error of a failed call. Shared by the
// history's translation units (history.cpp, history_jobs.cpp, history_bench.cpp, history_metrics.cpp), so
// that the step/column/finish dance is written once. Not part of store's interface.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include <sqlite3.h>

#include "core/result.hpp"

namespace baton::sqlite {

class Statement {
  public:
    Statement(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
    ~Statement() { sqlite3_finalize(s_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    sqlite3_stmt* get() const { return s_; }
    bool ok() const { return s_ != nullptr; }

  private:
    sqlite3_stmt* s_ = nullptr;
};

inline Error db_error(sqlite3* db, const std::string& what) {
    return make_error(what + ": " + sqlite3_errmsg(db));
}

// A text column, "" for NULL.
inline std::string column_text(sqlite3_stmt* s, int col) {
    const unsigned char* t = sqlite3_column_text(s, col);
    return t ? reinterpret_cast<const char*>(t) : "";
}

// One result row, by column index (the statement's own SELECT order).
class Row {
  public:
    explicit Row(sqlite3_stmt* s) : s_(s) {}
    bool null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
    std::int64_t int64(int col) const { return sqlite3_column_int64(s_, col); }
    int int32(int col) const { return sqlite3_column_int(s_, col); }
    double real(int col) const { return sqlite3_column_double(s_, col); }
    std::string text(int col) const { return column_text(s_, col); }
    // A BLOB column's bytes ("" for NULL).
    std::string blob(int col) const {
        const auto* p = static_cast<const char*>(sqlite3_column_blob(s_, col));
        return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s_, col))) : std::string();
    }
    // The column, or nullopt for NULL: the history's optional fields (an end not yet reached, a peak unknown).
    std::optional<std::int64_t> maybe_int64(int col) const {
        return null(col) ? std::nullopt : std::optional<std::int64_t>(int64(col));
    }
    std::optional<double> maybe_real(int col) const {
        return null(col) ? std::nullopt : std::optional<double>(real(col));
    }

  private:
    sqlite3_stmt* s_;
};

// How a walk over a statement's rows ended: every row read, the reader stopped it, or SQLite failed (a
// statement that did not prepare, a step that did not succeed; the caller names what it was reading).
enum class Walk { done, stopped, failed };

// Steps `st` through its rows, calling `each(const Row&)` on each. `each` returns void, or bool: false stops
// the walk there (a damaged row the caller reports itself).
template <class Each>
Walk each_row(const Statement& st, Each&& each) {
    if (!st.ok()) return Walk::failed;
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
        const Row row(st.get());
        if constexpr (std::is_same_v<std::invoke_result_t<Each&, const Row&>, bool>) {
            if (!each(row)) return Walk::stopped;
        } else {
            each(row);
        }
    }
    return rc == SQLITE_DONE ? Walk::done : Walk::failed;
}

// The first row of `st` (a lookup by key, a PRAGMA's answer) read by `read`; nullopt when there is none or
// SQLite failed (`failed`, when given, tells the two apart).
template <class Read>
auto first_row(const Statement& st, Read&& read, bool* failed = nullptr)
    -> std::optional<std::invoke_result_t<Read&, const Row&>> {
    const int rc = st.ok() ? sqlite3_step(st.get()) : SQLITE_ERROR;
    if (failed) *failed = rc != SQLITE_ROW && rc != SQLITE_DONE;
    if (rc != SQLITE_ROW) return std::nullopt;
    return read(Row(st.get()));
}

}  // namespace baton::sqlite
