// `baton launch`: start the local ranks of a distributed training (torchrun's environment), pass
// their output on and into per-rank logs, watch them as `baton run` watches a command (samples,
// findings, the hook's steps per rank, one run in the history), and stop them all when one
// fails: SIGTERM to every rank's group, a grace, SIGKILL, a bounded last wait. `--max-restarts`
// starts the whole local group again. The exit status is the first failed rank's own.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

#include "core/thresholds.hpp"
#include "hang/hang_watch.hpp"
#include "launch/worker_env.hpp"
#include "launch/workers.hpp"
#include "run/run_command.hpp"
#include "sample/sampler.hpp"

namespace baton::launch {

struct LaunchOptions {
    LaunchTopology topology;                     // complete: the port is chosen, the run id set
    std::vector<std::string> argv;               // one worker's command (python3 -u train.py ...)
    WorkerExtras extras;                         // bound GPUs, seed, NCCL debug, CPUs (the rest is filled here)
    std::string log_dir;                         // the run's logs go to log_dir/run_id/attempt_K/LOCAL_RANK/
    std::optional<gid_t> log_group;              // [launch] log_group: logs 0640 and this group's (else 0600)
    bool tee = false;                            // console lines prefixed "[rank N]:"
    std::optional<std::set<int>> console_ranks;  // --local-ranks-filter: only these local ranks on the console
    double grace_seconds = 10;
    double last_wait_seconds = 5;  // after SIGKILL: what is still there then is reported, not waited for
    std::string name;
    double interval_seconds = 0.5;
    bool quiet = false;
    SamplerOptions sampler;
    Thresholds thresholds;
    std::string db_path;  // empty: not recorded
    store::HistoryWriter::Options recording;
    // The hang verdict (docs/launch.md, "When a job hangs"): when to call it, and whether a hang
    // ends the launch ([launch] on_hang = "stop": torn down, exit status 124) or is reported only.
    hang::HangWatchOptions hang;
    bool stop_on_hang = false;
};

// The rank that failed first.
struct RankFailure {
    int rank = 0, local_rank = 0;
    pid_t pid = 0;
    int exit_status = 0, signal = 0;
    std::int64_t at_unix_ms = 0;
    int attempt = 0;
    std::vector<std::string> stderr_tail;  // its last stderr lines
    std::string stderr_log;
    std::string error_file;  // TORCHELASTIC_ERROR_FILE, when the script's @record wrote it
    // The first NCCL error line any local rank printed in this attempt (run/nccl_errors.hpp): with a
    // watchdog timeout every rank fails at once, and the one that printed first is the one to read.
    struct NcclLine {
        int rank = 0;
        std::string text, log;
        std::int64_t at_unix_ms = 0;
    };
    std::optional<NcclLine> nccl;
};

struct LaunchResult {
    run::RunStats stats;  // the whole launch as one run
    int exit_status = 0;
    int attempts = 0;
    int stop_signal = 0;                    // a stop signal the launcher forwarded (Ctrl-C, SIGTERM)
    std::optional<RankFailure> failure;     // of the last attempt
    std::vector<StuckProcess> stuck;        // left after SIGKILL and the last wait
    std::string run_dir;                    // log_dir/run_id
    std::optional<hang::HangVerdict> hang;  // the last hang verdict said (of the last attempt)
    bool stopped_on_hang = false;           // on_hang = "stop" ended the launch (exit status 124)
};

// Runs the launch to its end. An error when a rank's log cannot be opened (failed) or its
// program cannot be started (WorkerGroup::start's: not_found, not_executable).
Result<LaunchResult> run_launch(const LaunchOptions& o);

// The root-cause block printed on stderr when a rank failed.
std::string root_cause_text(const RankFailure& f);

// "SIGSEGV" for 11; "signal 77" for what has no name.
std::string signal_name(int sig);

}  // namespace baton::launch
