// Python stacks as the standard library's faulthandler writes them (faulthandler.register(SIGNAL,
// file=F, all_threads=True), or dump_traceback): each thread's header, "Thread 0x7f...  (most
// recent call first):" ("Current thread ..." for the one that took the signal, "Stack ..." for a
// single-thread dump), then one line per frame, innermost first:
//     File "/work/train.py", line 61 in all_reduce_step
// with "line ???" when the line is unknown, "  <no Python frame>" for a thread outside Python and
// "  ..." past the 100 frames it writes. Names are ASCII (faulthandler escapes the rest as \xNN).
// The file is appended to at every signal: the last dump is the one that counts. For the stacks
// of a hung job's ranks (issue 32); a pure parser, hostile input gives fewer frames, not a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::hang {

struct PyFrame {
    std::string file;
    std::optional<unsigned> line;  // none: "???"
    std::string function;
    bool operator==(const PyFrame&) const = default;
};

struct PyThreadStack {
    std::uint64_t thread_id = 0;  // pthread id, as printed
    bool current = false;         // the thread that wrote the dump (took the signal)
    std::vector<PyFrame> frames;  // innermost first, as written
    bool truncated = false;       // more frames than faulthandler writes ("  ...")
};

// The threads of the last complete or partial dump in `text`, in the order written; empty when
// there is none. A dump begins again where a thread already seen in it appears a second time.
std::vector<PyThreadStack> parse_faulthandler_dump(std::string_view text);

// The thread that runs the script: the one whose outermost frame is the script's top level
// (`<module>`), not a thread's `_bootstrap`; else the last one listed (CPython lists the newest
// threads first). Null when there are none.
const PyThreadStack* main_thread(const std::vector<PyThreadStack>& threads);

// One rank's stack (innermost first), and the ranks' stacks grouped: identical stacks once with
// their ranks, the largest group first (then by its lowest rank). `shared_outer` counts the
// outermost frames every group has in common: where the ranks parted is the frame after them.
struct RankStack {
    int rank = 0;
    std::vector<PyFrame> frames;
};
struct StackGroup {
    std::vector<int> ranks;  // ascending
    std::vector<PyFrame> frames;
    std::size_t shared_outer = 0;
};
std::vector<StackGroup> group_stacks(const std::vector<RankStack>& stacks);

// "rank 2", "ranks 0, 1, 3": ranks as the verdicts name them.
std::string ranks_text(const std::vector<int>& ranks);

}  // namespace baton::hang
