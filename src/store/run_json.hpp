// A recorded run as JSON: the objects of `baton runs --json` and `baton runs show --json`, and
// of baton serve's /api/v1/runs (docs/api.md).
#pragma once

#include <string>
#include <vector>

#include "store/history.hpp"

namespace baton::store {

// One run as a JSON object, without a newline; with its machine, findings and summary when
// `findings` is given (baton runs show --json), and its hang verdicts' texts when `hangs` is too.
void append_run_json(const RunRecord& r, std::string& out, const std::vector<RecordedFinding>* findings = nullptr,
                     const std::vector<RecordedHang>* hangs = nullptr);

}  // namespace baton::store
