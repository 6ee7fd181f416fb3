// `baton usage`'s records in the history (history_usage.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "store/history.hpp"
#include "store/history_table.hpp"

namespace baton::store {

class UsageTable : public HistoryTable {
  public:
    explicit UsageTable(History& h) : HistoryTable(h) {}

    // baton usage's records (history_usage.cpp), in one transaction: each replaces the one of the
    // same label and start. Those that reach `since_ms` or later, by start; those that ended before
    // `before_ms` deleted (retention), with how many.
    Status put_usage(const std::vector<UsageRecord>& rows);
    Result<std::vector<UsageRecord>> usage(std::int64_t since_ms);
    Result<std::int64_t> prune_usage(std::int64_t before_ms);
};

}  // namespace baton::store
