// Job arrays (`baton submit --array 1-1000 -- cmd {}`, `--array-file FILE`): one submission, many
// jobs, each with its own id, logs and BATON_ARRAY_INDEX. The client reads the spec or the file into
// elements (an index and the text that replaces `{}`); the agent makes each element's command and
// queues them all in one transaction (docs/queue.md, "Arrays").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace baton::queue {

// At most this many elements in one array (a sweep, not a way around the request's size).
inline constexpr std::size_t kMaxArrayElements = 10000;

struct JobArray {
    std::vector<std::int64_t> indices;  // BATON_ARRAY_INDEX of each element, in submission order
    std::vector<std::string> values;    // what replaces `{}` in its command
    // --array-file with no `{}` in the command: the line is appended as the command's last argument.
    bool append = false;
    bool empty() const { return indices.empty(); }
};

// --array SPEC: comma-separated indices and ranges, "1-1000", "0-99:10" (a step), "1,5,7", "0-9,20";
// an optional "%N" at the end is the array's --max-parallel (Slurm's form), returned in `max_parallel`
// (0 when absent). Each element's value is its index. Errors name the flag and the form.
Result<JobArray> parse_array_spec(std::string_view spec, unsigned& max_parallel);

// --array-file: one element per line (its index the line's number, from 1; blank lines skipped, a
// trailing "\r" dropped), the line as the value. `has_placeholder`: the command has a `{}` (else the
// line is appended as one argument). Errors name the file and the line.
Result<JobArray> parse_array_file(std::string_view text, const std::string& path, bool has_placeholder);

// Whether any word of `argv` holds `{}`.
bool has_placeholder(const std::vector<std::string>& argv);

// One element's command: every `{}` of every word replaced by `value`, or `value` appended (`append`).
std::vector<std::string> element_argv(const std::vector<std::string>& argv, const std::string& value, bool append);

}  // namespace baton::queue
