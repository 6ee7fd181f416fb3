// A prepared SQLite statement, finalised on scope exit, and the error of a failed call: shared by
// the history's translation units (history.cpp, history_metrics.cpp). Not part of store's interface.
#pragma once

#include <string>

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

}  // namespace baton::sqlite
