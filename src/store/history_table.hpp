// What every table's class of the history shares: the connection of one History and its helpers.
// A table's class is a view, made by the History's accessor (history.run_reads().load_run(id)), and
// lives no longer than that History.
#pragma once

#include <string>

#include "core/result.hpp"

struct sqlite3;

namespace baton::store {

class History;

class HistoryTable {
  protected:
    explicit HistoryTable(History& h);
    Status exec(const char* sql) const;
    // ROLLBACK, best effort (History::rollback).
    void rollback() const;
    // The error of a read that stopped on anything but the end of its rows (History::read_error).
    Error read_error(const std::string& what) const;

    History& h_;
    sqlite3* db_;
};

}  // namespace baton::store
