// PyTorch's Flight Recorder (ProcessGroupNCCL, PyTorch 2.3+; other backends in later versions):
// a ring buffer of each rank's last collectives (process group, sequence number, op, sizes,
// state, the Python stack that called it), dumped as a pickle to `<TEMP_FILE prefix><rank>` when a
// collective times out or when anything is written to the rank's pipe `<PIPE prefix><rank>.pipe`.
// This file holds the variables baton sets for it, the dump's model as read from the JSON the
// reader makes of the pickle (flight_recorder_dumps.hpp), and the judgement across ranks: which rank
// never called which collective, or which ranks called a different one, or the same one with other
// sizes. Pure.
//
// The dump's layout (version 2.x, keys as in torch/csrc/distributed/c10d/FlightRecorder.hpp):
//     {"version": "2.4", "pg_config": {NAME: {"name", "desc", "ranks": "[0, 1]"}},
//      "pg_status": {ID: {"last_enqueued_collective", "last_started_collective", "last_completed_collective"}},
//      "entries": [{"record_id", "pg_id", "process_group": [NAME, DESC], "collective_seq_id", "p2p_seq_id",
//                   "op_id", "profiling_name": "nccl:all_reduce", "time_created_ns", "input_sizes": [[1024]],
//                   "input_dtypes": ["Float"], "output_sizes", "output_dtypes", "state": "scheduled" |
//                   "started" | "completed", "retired", "timeout_ms", "is_p2p", "frames": [{"name",
//                   "filename", "line"}]}]}
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "hang/python_stacks.hpp"

namespace baton::hang {

// Where a job's Flight Recorder dumps go and how to ask for one, as the job's environment says.
struct FlightRecorderPaths {
    bool enabled = false;
    std::string dump_prefix;  // a rank's dump: dump_prefix + rank
    std::string pipe_prefix;  // its pipe: pipe_prefix + rank + ".pipe"; "": dumps on timeout only
    std::string off_reason;   // when not enabled: why ("TORCH_NCCL_TRACE_BUFFER_SIZE=0")
};

using EnvGet = std::function<std::optional<std::string>(const std::string&)>;

// The variables to add to a job whose dumps are to go to `dir` (DIR/rank_N, pipes DIR/pipe_N.pipe):
// the buffer (2000 entries), dump on timeout, the dump file and pipe prefixes, each under both of
// its names (TORCH_NCCL_* for PyTorch 2.3-2.6, TORCH_FR_* after), each pair only when the user set
// neither name.
std::vector<std::pair<std::string, std::string>> flight_recorder_environment(const std::string& dir,
                                                                             const EnvGet& inherited);

// The paths in force once those variables are added (the user's own where they set them).
FlightRecorderPaths flight_recorder_paths(const std::string& dir, const EnvGet& inherited);

struct FrEntry {
    std::string pg;        // the process group's name ("0" for the default group)
    std::string pg_desc;   // "default_pg", "undefined", ...
    std::int64_t seq = 0;  // collective_seq_id (p2p_seq_id for point-to-point)
    bool p2p = false;
    std::string op;      // "all_reduce" (profiling_name without its "nccl:" prefix)
    std::string sizes;   // the input sizes, as the dump lists them: "[[1024], [3]]"
    std::string dtypes;  // "Float, Long"
    std::string state;   // "scheduled", "started", "completed"
    std::int64_t created_unix_ms = 0;
    std::vector<PyFrame> frames;  // innermost first
};

struct FrDump {
    int rank = -1;
    std::string version;
    std::map<std::string, std::vector<int>> pg_ranks;  // process group name -> its global ranks
    std::map<std::string, std::string> pg_desc;
    std::vector<FrEntry> entries;  // in record order, oldest first
};

// A dump as the reader wrote it in JSON. Errors: not JSON, not a dump (no entries list).
Result<FrDump> parse_flight_recorder_json(std::string_view json, int rank);

// The oldest collective of the dump that did not complete (point-to-point calls aside); none when
// every one completed.
std::optional<FrEntry> oldest_pending(const FrDump& d);

// "all_reduce #15 of process group 0 (default_pg)".
std::string fr_collective_text(const FrEntry& e);

// The judgement of the dumps of a job's ranks.
struct FrVerdict {
    // A rank missing from a collective, or ranks that called different ones (op, sizes or dtypes):
    // a desync. False when every rank waits in the same one (the collective itself does not end).
    bool desync = false;
    std::vector<int> culprits;  // the ranks named as the cause, ascending
    std::string pg;
    std::int64_t seq = 0;
    std::string op;
    std::string summary;  // one sentence, "Flight Recorder: rank 2 never called all_reduce #15 ..."
};

// Judged per process group, over the ranks whose dumps are in `dumps` and belong to it; a group
// whose ranks all completed everything says nothing. `local_ranks`: the ranks whose dumps were asked
// for (a member among them without a dump is named; empty: every member of a group was). `multi_node`:
// other nodes' ranks are not in the dumps, so ranks that all wait here may wait for one of those.
// nullopt: nothing pending.
std::optional<FrVerdict> judge_flight_recorder(const std::vector<FrDump>& dumps, const std::vector<int>& local_ranks,
                                               bool multi_node);

}  // namespace baton::hang
