// The history's row helpers on a real in-memory SQLite: each row read, a reader that stops, a statement
// that fails half way, and the first row of a lookup that finds nothing.
#include "store/sqlite_statement.hpp"

#include <gtest/gtest.h>

#include <vector>

using baton::sqlite::each_row;
using baton::sqlite::first_row;
using baton::sqlite::Row;
using baton::sqlite::Statement;
using baton::sqlite::Walk;

namespace {

struct MemoryDb {
    sqlite3* db = nullptr;
    MemoryDb() {
        sqlite3_open(":memory:", &db);
        sqlite3_exec(db,
                     "CREATE TABLE t (n INTEGER, x REAL, s TEXT, b BLOB);"
                     "INSERT INTO t VALUES (1, 0.5, 'one', x'610062'), (2, NULL, NULL, NULL), (3, 1.5, 'three', x'');",
                     nullptr, nullptr, nullptr);
    }
    ~MemoryDb() { sqlite3_close(db); }
};

}  // namespace

TEST(SqliteRows, EachRowReadsEveryColumnKind) {
    MemoryDb m;
    const Statement st(m.db, "SELECT n, x, s, b FROM t ORDER BY n");
    std::vector<std::int64_t> ns;
    std::vector<std::optional<double>> xs;
    std::vector<std::string> texts, blobs;
    EXPECT_EQ(each_row(st,
                       [&](const Row& r) {
                           ns.push_back(r.int64(0));
                           xs.push_back(r.maybe_real(1));
                           texts.push_back(r.text(2));
                           blobs.push_back(r.blob(3));
                       }),
              Walk::done);
    EXPECT_EQ(ns, (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ(xs, (std::vector<std::optional<double>>{0.5, std::nullopt, 1.5}));
    EXPECT_EQ(texts, (std::vector<std::string>{"one", "", "three"}));  // NULL text reads as ""
    EXPECT_EQ(blobs[0], std::string("a\0b", 3));                       // a blob keeps its NUL bytes
    EXPECT_EQ(blobs[1], "");
}

TEST(SqliteRows, AReaderThatReturnsFalseStopsTheWalk) {
    MemoryDb m;
    const Statement st(m.db, "SELECT n FROM t ORDER BY n");
    int seen = 0;
    EXPECT_EQ(each_row(st, [&](const Row& r) { return ++seen, r.int64(0) < 2; }), Walk::stopped);
    EXPECT_EQ(seen, 2);
}

TEST(SqliteRows, AFailedStatementIsAFailedWalkNotAnEmptyOne) {
    MemoryDb m;
    const Statement unprepared(m.db, "SELECT nothing FROM nowhere");
    EXPECT_FALSE(unprepared.ok());
    EXPECT_EQ(each_row(unprepared, [](const Row&) {}), Walk::failed);
    // A step that fails after rows began: abs() of the smallest integer overflows at the fourth row.
    sqlite3_exec(m.db, "INSERT INTO t VALUES (-9223372036854775808, 0, '', x'')", nullptr, nullptr, nullptr);
    const Statement overflow(m.db, "SELECT abs(n) FROM t ORDER BY rowid");
    int rows = 0;
    EXPECT_EQ(each_row(overflow, [&](const Row&) { ++rows; }), Walk::failed);
    EXPECT_EQ(rows, 3);
    bool failed = false;
    EXPECT_FALSE(first_row(
                     unprepared, [](const Row& r) { return r.int64(0); }, &failed)
                     .has_value());
    EXPECT_TRUE(failed);
}

TEST(SqliteRows, FirstRowTellsNoneFromFailure) {
    MemoryDb m;
    const Statement none(m.db, "SELECT n FROM t WHERE n = 42");
    bool failed = true;
    EXPECT_FALSE(first_row(
                     none, [](const Row& r) { return r.int64(0); }, &failed)
                     .has_value());
    EXPECT_FALSE(failed);
    const Statement some(m.db, "SELECT s FROM t ORDER BY n DESC");
    EXPECT_EQ(first_row(some, [](const Row& r) { return r.text(0); }), "three");
}
