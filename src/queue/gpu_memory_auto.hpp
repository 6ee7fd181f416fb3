// --gpu-mem auto: what a job will need on each GPU, from the runs of the same name in the history
// (docs/queue.md): the highest GPU memory any of its GPUs used in the last kAutoRuns successful runs
// (exit status 0), plus kAutoMarginPercent, rounded up to 256 MiB.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.hpp"
#include "store/history.hpp"

namespace baton::queue {

inline constexpr int kAutoRuns = 5;
inline constexpr double kAutoMarginPercent = 10;

// The peak plus the margin, rounded up to 256 MiB.
std::uint64_t with_margin(std::uint64_t peak_bytes);

// The size for `name`, or an error saying why there is none ("no successful run named NAME in the
// history yet: give --gpu-mem SIZE the first time").
Result<std::uint64_t> auto_gpu_memory(store::History& h, const std::string& name);

}  // namespace baton::queue
