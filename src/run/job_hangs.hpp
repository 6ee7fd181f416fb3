// The hang verdict of one job, turn by turn, for `baton run` and `baton launch`: the hang watch told
// the hook's steps (JobWatch's), a look at the job's ranks when one is due, and a verdict that
// appears or changes said on stderr (the whole block, or one line when the job is to stop on it),
// kept in the job's stacks directory (hang.txt) and given to the JobWatch as a finding (summary,
// history). A step or working ranks clear it, said in one line.
//
// The ranks' Flight Recorder dumps (PyTorch 2.3+ with NCCL) are asked for once the ranks look stuck
// (no steps for hang_seconds; without steps, no rank's stack moved since the last look), at most
// every 30 s, without waiting: a later turn reads them once written, and the looks after that carry
// them into the verdict while no rank's stack moves. A healthy job is never asked.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hang/flight_recorder.hpp"
#include "hang/flight_recorder_dumps.hpp"
#include "hang/hang_watch.hpp"
#include "hang/rank_probe.hpp"
#include "run/job_watch.hpp"

namespace baton::run {

class JobHangs {
  public:
    // `who`: "baton launch"; `stacks_dir`: where hang.txt goes ("": not kept); `stop_on_hang`: on_hang = stop.
    // `fr`: where the ranks' Flight Recorder dumps go (flight_recorder_paths of the job's environment).
    JobHangs(hang::HangWatchOptions options, bool stop_on_hang, std::string who, std::string stacks_dir,
             hang::FlightRecorderPaths fr = {});

    // Where the ranks' Flight Recorder dumps go, once known. `python`: the interpreter that reads
    // them ("": the job's own, the first rank's /proc/PID/exe; the agent, which may be root, gives
    // the system's instead of running a program of its users').
    void set_flight_recorder(hang::FlightRecorderPaths fr, std::string python = "") {
        fr_ = std::move(fr);
        fr_python_ = std::move(python);
    }

    // The job's processes were (re)started now: steps and looks of the last ones are forgotten.
    void restart();

    // What a turn needs of the job's watch, and what it gives back to it: taken and given under
    // whatever guards the watch, while the turn itself (a look at the ranks' stacks, up to 2 s; the
    // Flight Recorder's reader, up to 10 s) runs without it.
    struct Steps {
        std::int64_t last_step_unix_ms = 0;  // JobWatch::last_step_unix_ms
        double median_step_seconds = 0;      // JobWatch::median_step_seconds
    };
    struct Said {
        std::optional<diagnose::Finding> finding;  // a verdict that appeared or changed
        std::string rule, text;                    // it as the history records it
        bool stop = false;                         // it appeared and the job is to stop on it
    };
    static Steps steps_of(JobWatch& watch);
    static void give(JobWatch& watch, const Said& said);

    // One turn; `ranks` is asked only when a look is due. Touches no JobWatch.
    Said step(const Steps& steps, const std::function<std::vector<hang::ProbedRank>()>& ranks);
    // The same for a caller that holds its watch throughout: true once, when the verdict appears
    // and the job is to stop on it.
    bool turn(JobWatch& watch, const std::function<std::vector<hang::ProbedRank>()>& ranks) {
        const Said said = step(steps_of(watch), ranks);
        give(watch, said);
        return said.stop;
    }

    // The last verdict said (cleared or not).
    const std::optional<hang::HangVerdict>& last_verdict() const { return last_; }
    // The verdict as a finding while it holds (the agent's /metrics); none once cleared.
    std::optional<diagnose::Finding> active_finding() const;

  private:
    // The dumps read after a request, and the ranks' stacks when it was made.
    struct FrResult {
        double at = 0;  // monotonic seconds of the request
        std::map<int, std::vector<hang::PyFrame>> basis;
        std::int64_t last_step_ms = 0;         // the newest step then
        std::map<int, hang::FrEntry> pending;  // rank -> its oldest collective not completed
        std::optional<hang::FrVerdict> verdict;
        std::string none;  // why there is no verdict
    };
    void collect_flight_recorder(double now);
    void attach_flight_recorder(hang::Look& look, std::int64_t last_step_ms) const;
    void maybe_request_flight_recorder(const hang::Look& look, std::int64_t last_step_ms, double now);

    hang::HangWatch watch_;
    hang::HangWatchOptions options_;
    bool stop_on_hang_;
    std::string who_, stacks_dir_;
    std::int64_t started_ms_ = 0;
    std::optional<hang::HangVerdict> last_;
    hang::FlightRecorderPaths fr_;
    std::string fr_python_;
    std::optional<hang::FrRequest> fr_request_;
    double fr_requested_at_ = 0;
    std::int64_t fr_step_ms_ = 0;
    std::map<int, std::vector<hang::PyFrame>> fr_basis_;
    std::map<int, pid_t> fr_pids_;
    std::optional<FrResult> fr_result_;
    std::optional<hang::Look> previous_;
};

// The ranks of the job below `root` as the verdict sees them: its Python processes with a RANK
// (torchrun's, baton launch's), or, for a training loop that sends the hook's steps (`steps_seen`),
// its Python processes. A plain script that waits (a monitor that sleeps, a prompt) is no hung
// training: none.
std::vector<hang::ProbedRank> job_ranks(pid_t root, bool steps_seen);

}  // namespace baton::run
