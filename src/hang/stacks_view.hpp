// What `baton stacks` prints: the main threads of the processes grouped (identical stacks once, with
// the ranks or pids that share them; the frames where a group parts from the others marked), the
// processes that gave no stacks and why, and with `threads` every other thread too. Frames read as
// a Python traceback does, outermost first ("most recent call last"). The JSON keeps every thread of
// every process (keys in docs/cli.md, `baton stacks`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hang/stack_request.hpp"

namespace baton::hang {

// "rank 2" for a process with a RANK, else "pid 1234 (python3)".
std::string process_label(const StackTarget& t);

// The main threads of the replies that have stacks, grouped (group_stacks), each group's members
// as indices into `replies`.
struct ReplyGroup {
    std::vector<std::size_t> members;
    std::vector<PyFrame> frames;  // innermost first
    std::size_t shared_outer = 0;
};
std::vector<ReplyGroup> group_replies(const std::vector<StackReply>& replies);

// The frames (innermost first) as a traceback's lines, outermost first, each after `indent`; frames at
// and past depth `marked_from_outer` (counted from the outermost) get "> " instead of two spaces.
std::string traceback_lines(const std::vector<PyFrame>& frames, std::size_t marked_from_outer,
                            std::string_view indent = "  ");

std::string stacks_text(const std::vector<StackReply>& replies, bool threads);
std::string stacks_json(const std::vector<StackReply>& replies);

}  // namespace baton::hang
