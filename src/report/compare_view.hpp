// The views of `baton compare`: two runs side by side (their figures with the change, their
// findings matched as run_comparison.hpp says) and two benches link by link (matched by bench and
// link name: before and after a driver update or a BIOS change); as text or one JSON object
// (docs/cli.md).
#pragma once

#include <string>
#include <vector>

#include "store/history.hpp"

namespace baton {

std::string compare_runs_text(const StoredRun& a, const StoredRun& b);
std::string compare_runs_json(const StoredRun& a, const StoredRun& b);

// One link in either bench or both, in the order first measured (a's links, then b's new ones).
struct LinkPair {
    std::string bench, link;
    const BenchLinkRecord* a = nullptr;  // none: not measured in that bench
    const BenchLinkRecord* b = nullptr;
};
std::vector<LinkPair> pair_links(const std::vector<BenchLinkRecord>& a, const std::vector<BenchLinkRecord>& b);

std::string compare_benches_text(const RunRecord& ra, const RunRecord& rb, const std::vector<BenchLinkRecord>& la,
                                 const std::vector<BenchLinkRecord>& lb);
std::string compare_benches_json(const RunRecord& ra, const RunRecord& rb, const std::vector<BenchLinkRecord>& la,
                                 const std::vector<BenchLinkRecord>& lb);

}  // namespace baton
