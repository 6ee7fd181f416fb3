// Asking a job's ranks for their Flight Recorder dumps and reading them (flight_recorder.hpp has the
// model and the judgement). A request writes a byte to each rank's pipe, which ProcessGroupNCCL's
// heartbeat thread polls (every second once TORCH_NCCL_DUMP_ON_TIMEOUT=1) and answers by writing its
// dump; it never blocks: a pipe with no reader (a rank gone, PyTorch before 2.3, gloo, no process
// group yet) is said, not waited for. The dumps are pickles: they are read by a Python interpreter
// (the job's own) running a reader that refuses every global but the list builders of PyTorch's
// pickler, so a file can run no code, and that writes each dump as one line of JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hang/flight_recorder.hpp"

namespace baton::hang {

// Makes DIR (0700) when missing; its parent must exist. Errors name the path.
Status make_flight_recorder_dir(const std::string& dir);

// What a request asked.
struct FrRequest {
    std::int64_t at_unix_ns = 0;
    std::vector<int> asked;                // the ranks whose pipe took the byte
    std::map<int, std::string> not_asked;  // the others, with why
};

// Writes to the pipe of each of `ranks` (p.pipe_prefix + rank + ".pipe"); never blocks.
FrRequest request_flight_recorder_dumps(const FlightRecorderPaths& p, const std::vector<int>& ranks);

// Whether every asked rank's dump (p.dump_prefix + rank) was written since the request and has not
// changed for `settle_ms` (PyTorch writes it in place, not by a rename).
bool flight_recorder_dumps_ready(const FlightRecorderPaths& p, const FrRequest& r, std::int64_t now_unix_ns,
                                 std::int64_t settle_ms = 200);

// The reader's Python source.
std::string_view flight_recorder_reader_source();

// The dumps read, and for each rank without one, why.
struct FrCollection {
    std::vector<FrDump> dumps;           // by rank
    std::map<int, std::string> no_dump;  // rank -> why
};

// Reads `files` (rank, path) with `python` (at most `timeout_seconds` in all). `since_unix_ns`: a
// file older than this is not the dump asked for (0: any). Errors come per rank, never as a throw.
FrCollection read_flight_recorder_dumps(const std::string& python,
                                        const std::vector<std::pair<int, std::string>>& files,
                                        std::int64_t since_unix_ns, double timeout_seconds);

// The Python interpreter of process `pid` (its /proc/PID/exe), "python3" when that is not readable.
std::string interpreter_of(int pid, const std::string& proc_root = "/proc");

}  // namespace baton::hang
