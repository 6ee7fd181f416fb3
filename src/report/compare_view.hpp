// The views of `baton compare`: two runs side by side (their figures with the change, their
// findings matched as run_comparison.hpp says) and two benches link by link (matched by bench and
// link name: before and after a driver update or a BIOS change); as text or one JSON object
// (docs/cli.md).
#pragma once

#include <string>
#include <vector>

#include "report/step_section.hpp"
#include "store/history.hpp"

namespace baton::report {

// `sa`, `sb`: the runs' profiler windows (baton run --profile), when they have one: the mean step's
// breakdown compared row by row (a "step" block of rows, "step" in the JSON).
std::string compare_runs_text(const store::StoredRun& a, const store::StoredRun& b, const StepSection* sa = nullptr,
                              const StepSection* sb = nullptr);
std::string compare_runs_json(const store::StoredRun& a, const store::StoredRun& b, const StepSection* sa = nullptr,
                              const StepSection* sb = nullptr);

// One link in either bench or both, in the order first measured (a's links, then b's new ones).
struct LinkPair {
    std::string bench, link;
    const store::BenchLinkRecord* a = nullptr;  // none: not measured in that bench
    const store::BenchLinkRecord* b = nullptr;
};
std::vector<LinkPair> pair_links(const std::vector<store::BenchLinkRecord>& a,
                                 const std::vector<store::BenchLinkRecord>& b);

std::string compare_benches_text(const store::RunRecord& ra, const store::RunRecord& rb,
                                 const std::vector<store::BenchLinkRecord>& la,
                                 const std::vector<store::BenchLinkRecord>& lb);
std::string compare_benches_json(const store::RunRecord& ra, const store::RunRecord& rb,
                                 const std::vector<store::BenchLinkRecord>& la,
                                 const std::vector<store::BenchLinkRecord>& lb);

}  // namespace baton::report
