// Files the Python hook writes into the run's private directory (a profiler window's trace, an
// out-of-memory capture) and names in an event. Anyone may write to the hook's socket, so a file is
// read only when it is a regular file directly in the directory baton made for it, never through a
// link, and not larger than its kind may be.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.hpp"

namespace baton::run {

// The bytes of `path`, which must name a regular file directly in `dir`, at most `max_bytes` long.
// `what` names the file in errors ("the profile", "the out-of-memory capture"); a path outside `dir`
// is refused with ErrorCode::permission_denied.
Result<std::string> read_hook_file(const std::string& dir, const std::string& path, std::uint64_t max_bytes,
                                   const std::string& what);

}  // namespace baton::run
