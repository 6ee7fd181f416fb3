// `baton runs export`: a recorded run's samples or the hook's steps as CSV (one header row, a
// column per figure, a column group per GPU seen in any sample) or JSON Lines (one object per
// sample, absent keys for figures not recorded). Values are in base units, as the snapshot JSON:
// bytes, bytes per second, percent, seconds (docs/cli.md).
#pragma once

#include <string>
#include <vector>

#include "store/history.hpp"

namespace baton::report {

// `format`: "csv" or "jsonl".
std::string export_samples(const std::vector<store::RunSample>& samples, const std::string& format);
std::string export_steps(const std::vector<store::StepEvent>& steps, const std::string& format);

}  // namespace baton::report
