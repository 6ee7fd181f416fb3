// The out-of-memory capture of `baton run` (issue 34, docs/memory.md): what baton tells the Python
// hook (where a capture goes, how many allocation events to keep with --memory-history), and a
// capture taken back once the hook names it (only from the run's own memory directory: anyone may
// write to the hook's socket) and read.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "gpu_memory/allocator_capture.hpp"

namespace baton::run {

// The variables the hook reads (python/baton/_memory.py): BATON_MEMORY_DIR, and BATON_MEMORY_HISTORY
// when `history_events` > 0 (--memory-history).
std::vector<std::pair<std::string, std::string>> memory_environment(const std::string& dir,
                                                                    std::int64_t history_events);

// The events --memory-history keeps when given no number: PyTorch's allocator keeps them in a ring,
// a few KiB each with their stacks, so a capture stays in the megabytes.
inline constexpr std::int64_t kDefaultHistoryEvents = 10000;

struct TakenCapture {
    std::string json;  // as the hook wrote it, for the history
    gpu_memory::OomCapture capture;
};

// The capture at `path`, a regular file directly in `dir` of at most gpu_memory::kMaxCaptureBytes,
// read and parsed. Errors name the path and why.
Result<TakenCapture> take_oom_capture(const std::string& dir, const std::string& path);

}  // namespace baton::run
