// What read rate `baton bench disk` judges the storage against: --need as typed (2GB/s), or
// --need-from-run: the p95 of a recorded run's disk reads, so "is this disk fast enough for that
// job" is one command after the job ran.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "store/history.hpp"

namespace baton::measure {

struct DiskNeed {
    std::optional<double> bytes_per_second;  // none: no need given, the disk is only measured
    std::string source;                      // "--need 2GB/s", "run 12: the p95 of its disk reads"
};

// --need's text: a rate such as 2GB/s, 500MB/s or 1.5GiB/s; invalid_argument otherwise.
Result<DiskNeed> need_from_flag(const std::string& text);

// A run's samples -> the p95 of its disk reads (samples without a disk figure are left out); an
// error when the run recorded no reads, or read next to nothing (no need to measure against).
Result<DiskNeed> need_from_samples(std::int64_t run, const std::vector<store::RunSample>& samples);

// --need or --need-from-run (the CLI lets only one be given; both empty: no need). The run's
// samples come from `history`, opened only when a run is named (`open_history` is called then).
Result<DiskNeed> disk_need(const std::string& need, const std::string& need_from_run,
                           const std::function<Result<store::History>()>& open_history);

}  // namespace baton::measure
