#include "run/nccl_errors.hpp"

#include <array>

namespace baton::run {

namespace {

// As NCCL (src/include/debug.h, ncclGetErrorString) and PyTorch's ProcessGroupNCCL word them.
constexpr std::array<std::string_view, 17> kMarks = {
    "NCCL WARN",
    "unhandled system error",
    "unhandled cuda error",
    "internal error - please report this issue to the NCCL developers",
    "remote process exited or there was a network error",
    "ncclSystemError",
    "ncclInternalError",
    "ncclUnhandledCudaError",
    "ncclInvalidUsage",
    "ncclInvalidArgument",
    "ncclRemoteError",
    "NCCL error in:",
    "NCCL communicator was aborted",
    "Watchdog caught collective operation timeout",
    "Some NCCL operations have failed or timed out",
    "Heartbeat monitor timed out",
    "ProcessGroupNCCL's watchdog got stuck",
};

}  // namespace

bool nccl_error_line(std::string_view line) {
    for (std::string_view m : kMarks)
        if (line.find(m) != std::string_view::npos) return true;
    return false;
}

}  // namespace baton::run
