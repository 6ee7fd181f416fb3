#include "hang/frame_roles.hpp"

#include <algorithm>
#include <array>

namespace baton::hang {

namespace {

// torch.distributed's blocking entry points: where a rank that waits for the others sits.
constexpr std::array<std::string_view, 26> kCollectives = {"all_reduce",
                                                           "all_reduce_coalesced",
                                                           "all_gather",
                                                           "all_gather_into_tensor",
                                                           "_all_gather_base",
                                                           "all_gather_object",
                                                           "all_gather_coalesced",
                                                           "reduce_scatter",
                                                           "reduce_scatter_tensor",
                                                           "_reduce_scatter_base",
                                                           "all_to_all",
                                                           "all_to_all_single",
                                                           "broadcast",
                                                           "broadcast_object_list",
                                                           "reduce",
                                                           "gather",
                                                           "gather_object",
                                                           "scatter",
                                                           "scatter_object_list",
                                                           "barrier",
                                                           "monitored_barrier",
                                                           "send",
                                                           "recv",
                                                           "isend",
                                                           "irecv",
                                                           "batch_isend_irecv"};

bool contains(std::string_view s, std::string_view part) {
    return s.find(part) != std::string_view::npos;
}

bool distributed_file(std::string_view path) {
    return contains(path, "torch/distributed/") || contains(path, "torch/nn/parallel/distributed.py");
}

}  // namespace

bool library_file(std::string_view path) {
    if (path.empty() || path.front() == '<') return true;  // <frozen importlib._bootstrap>, <string>
    if (contains(path, "/site-packages/") || contains(path, "/dist-packages/")) return true;
    // The standard library: .../lib/python3.11/threading.py, concurrent/futures/... (a user's own
    // lib/python/ directory has no version after it).
    const std::size_t lib = path.find("/lib/python");
    return lib != std::string_view::npos && lib + 11 < path.size() && path[lib + 11] >= '0' && path[lib + 11] <= '9';
}

const PyFrame* user_frame(const std::vector<PyFrame>& frames) {
    for (const PyFrame& f : frames)
        if (!library_file(f.file)) return &f;
    return frames.empty() ? nullptr : &frames.back();
}

std::string collective_of(const std::vector<PyFrame>& frames) {
    std::string innermost_distributed;
    for (const PyFrame& f : frames) {
        if (distributed_file(f.file)) {
            if (std::find(kCollectives.begin(), kCollectives.end(), f.function) != kCollectives.end())
                return f.function;
            if (innermost_distributed.empty()) innermost_distributed = f.function;
        }
    }
    if (!innermost_distributed.empty()) return innermost_distributed;
    for (const PyFrame& f : frames)
        if (contains(f.file, "torch/autograd/") && (f.function == "backward" || f.function == "_engine_run_backward"))
            return "backward";
    return "";
}

std::string place_text(const PyFrame& f) {
    const std::string fn = f.function == "<module>" ? f.function : f.function + "()";
    return fn + " at " + f.file + ":" + (f.line ? std::to_string(*f.line) : "?");
}

}  // namespace baton::hang
