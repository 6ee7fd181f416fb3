// NCCL's own error lines and PyTorch's about NCCL, as ranks print them: `NCCL WARN` (NCCL's warnings,
// "host:pid:tid [dev] NCCL WARN ..."), its error codes and their texts (`unhandled system error`,
// `ncclRemoteError` / "remote process exited or there was a network error", ...), PyTorch's watchdog
// ("Watchdog caught collective operation timeout", "Heartbeat monitor timed out") and "NCCL error in:".
// In a job whose ranks all fail at once (a watchdog fires on every rank), the rank that printed one
// first is the one to read. Pure.
#pragma once

#include <string_view>

namespace baton::run {

// Whether `line` is one of them.
bool nccl_error_line(std::string_view line);

}  // namespace baton::run
