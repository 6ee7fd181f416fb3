// A finished `baton bench` into the history: one run of kind bench, its printed report as the
// summary, one row per link measured (so `baton compare` matches two benches link by link).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "measure/bench_report.hpp"
#include "core/result.hpp"
#include "store/history.hpp"

namespace baton::measure {

// The reports' links, in the order measured, as the history keeps them.
std::vector<store::BenchLinkRecord> link_records(const std::vector<BenchReport>& reports);

struct BenchRecord {
    std::string what;  // the subcommand ("h2d"); empty for the quick suite
    std::string name;  // --name; empty: "bench" and the subcommand
    std::string cwd, host;
    std::int64_t start_ms = 0, end_ms = 0;
    std::string text;  // the report as printed
};

// Records into the history at `db_path` (created when missing); the new run's id.
Result<std::int64_t> record_bench(const std::string& db_path, const BenchRecord& record,
                                  const std::vector<BenchReport>& reports);

}  // namespace baton::measure
