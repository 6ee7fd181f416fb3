// `baton tune`'s results in the history (history_tunings.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "store/history.hpp"
#include "store/history_table.hpp"

namespace baton::store {

class TuningTable : public HistoryTable {
  public:
    explicit TuningTable(History& h) : HistoryTable(h) {}

    // `baton tune`'s result (history_tunings.cpp). The latest tuning of exactly `command` in `cwd`,
    // else of the same `script` in `cwd`; none when neither was tuned.
    Result<std::int64_t> add_tuning(const TuningRecord& t);
    Result<std::optional<TuningRecord>> latest_tuning(const std::string& command, const std::string& script,
                                                      const std::string& cwd);
};

}  // namespace baton::store
