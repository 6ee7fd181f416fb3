// What clients and the agent say to each other over the queue's Unix socket: one JSON object per
// line each way ({"op": "submit", ...} -> {"ok": true, ...} or {"ok": false, "error": "...", "code":
// "not_found"}: core/result.hpp's ErrorCode by name), and
// for `logs` the bytes asked for right after the answer's line. docs/queue.md lists the requests.
//
// A request line is at most kMaxRequestBytes (a submit carries the caller's whole environment);
// anything longer, not JSON, or with a field of the wrong type is refused with one line, and the
// agent goes on. Arguments and environment travel as base64 of NUL-ended strings: a command's
// words are bytes, not necessarily UTF-8, and must reach the job unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.hpp"
#include "queue/job_array.hpp"
#include "queue/job_edit.hpp"
#include "queue/job_request.hpp"

namespace baton::queue {

inline constexpr std::size_t kMaxRequestBytes = 4u << 20;

// info: the agent's own state (its pid, and whether its jobs get cgroups: `baton doctor` asks).
// pause, resume: a running job's whole tree stopped (SIGSTOP) and continued (SIGCONT). restart: a new
// job with an ended one's spec. clean: the ended jobs forgotten, with their directories. groups,
// group_set, group_remove: the groups and their parallel limits (baton group). edit: a waiting job
// changed (job_edit.hpp). usage: who used the GPUs and CPUs (baton usage), from the history.
enum class Op {
    submit,
    list,
    show,
    cancel,
    hold,
    release,
    retry,
    wait,
    logs,
    info,
    pause,
    resume,
    restart,
    clean,
    groups,
    group_set,
    group_remove,
    edit,
    usage
};

const char* op_name(Op op);

// A job as submitted: what the command line says, before the agent resolves it against the machine.
struct Submission {
    std::string name;
    std::vector<std::string> argv;
    std::string cwd;
    std::vector<std::pair<std::string, std::string>> env;
    JobRequest request;
    std::string gpu_list;         // --gpu as typed (indices or UUIDs): the agent resolves it
    std::string gpu_memory_text;  // "auto" or a size, as typed (for messages)
    int priority = 0;
    std::vector<std::int64_t> after;
    bool after_ok = false;
    bool hold = false;         // submitted held: it waits for `baton release`
    bool default_cpus = true;  // --cpus not given: the agent decides (request.want.cpus is then 0)
    JobArray array;            // --array / --array-file: one job per element (none: one job)
};

struct Request {
    Op op = Op::list;
    Submission submit;               // submit
    std::vector<std::int64_t> jobs;  // cancel: one or more; show, wait, hold, release, retry, logs, pause, resume,
                                     // restart: one
    bool all = false;                // list: ended jobs too
    double grace_seconds = 10;       // cancel: SIGTERM, then SIGKILL after this
    bool stderr_stream = false;      // logs: stderr instead of stdout
    std::uint64_t offset = 0;        // logs: from this byte
    bool successful_only = false;    // clean: only the jobs that are done (exit 0)
    std::string group;               // group_set, group_remove: its name
    unsigned parallel = 1;           // group_set: how many of its jobs run at once
    JobEdit edit;                    // edit: what changes in `jobs`' one job
    std::int64_t since_ms = 0;       // usage: the jobs seen since then (Unix ms, >= 0)
    std::string user;                // usage: only this user's ("": everyone's)
};

std::string request_line(const Request& r);  // with its newline
Result<Request> parse_request(std::string_view line);

// The agent's answers, encoded here and parsed back here so the two ends cannot drift:
// `answer_line(fields)` is {"ok": true, fields...}; `answer_line_with(key, json)` is the same with one field
// already encoded (a job list of thousands is not parsed and made again); `refusal_line(error)` is
// {"ok": false, "error": message, "code": name}. `parse_answer_line` gives the fields of an answer, or the
// refusal as an Error with its ErrorCode: a client tests the code and never an error's text.
std::string answer_line(const nlohmann::json& fields);  // with its newline
std::string answer_line_with(std::string_view key, std::string_view encoded_json);
std::string refusal_line(const Error& e);
Result<nlohmann::json> parse_answer_line(std::string_view line);

// Strings packed NUL-ended, then base64 (and back; an error for anything that is not base64).
std::string pack_base64(const std::vector<std::string>& strings);
Result<std::vector<std::string>> unpack_base64(std::string_view text);

}  // namespace baton::queue
