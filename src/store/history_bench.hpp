// `baton bench`'s records in the history (history_bench.cpp): a finished run of kind "bench" and
// its links.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "store/history.hpp"
#include "store/history_table.hpp"

namespace baton::store {

class BenchTable : public HistoryTable {
  public:
    explicit BenchTable(History& h) : HistoryTable(h) {}

    // A bench, recorded whole once it is done (history_bench.cpp): a finished run of kind "bench"
    // with exit status 0, its report text as the summary, and its links, in one transaction.
    Result<std::int64_t> record_bench(const std::string& name, const std::string& command, const std::string& cwd,
                                      const std::string& host, std::int64_t start_ms, std::int64_t end_ms,
                                      const std::string& report, const std::vector<BenchLinkRecord>& links);
    // A bench run's links, in the order measured (empty for other runs).
    Result<std::vector<BenchLinkRecord>> bench_links(std::int64_t run);
};

}  // namespace baton::store
