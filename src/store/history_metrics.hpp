// baton serve's machine history (history_metrics.cpp): one row per metric, subject and minute.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "store/history.hpp"
#include "store/history_table.hpp"

namespace baton::store {

class MinuteTable : public HistoryTable {
  public:
    explicit MinuteTable(History& h) : HistoryTable(h) {}

    // baton serve's machine history (history_metrics.cpp). Rows replace those of the same metric,
    // subject and minute (an agent restarted within a minute writes its minute again).
    Status add_metric_minutes(const std::vector<MetricMinute>& rows);
    // One series' minutes in [from_minute, to_minute], in time order.
    Result<std::vector<MetricMinute>> metric_minutes(const std::string& metric, const std::string& subject,
                                                     std::int64_t from_minute, std::int64_t to_minute);
    // Every (metric, subject) that has minutes, with no values filled in.
    Result<std::vector<MetricMinute>> metric_series();
    // Deletes the minutes before `minute` (retention); returns how many.
    Result<std::int64_t> prune_metric_minutes(std::int64_t minute);
};

}  // namespace baton::store
