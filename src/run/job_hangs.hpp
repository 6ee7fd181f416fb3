// The hang verdict of one job, turn by turn, for `baton run` and `baton launch`: the hang watch told
// the hook's steps (JobWatch's), a look at the job's ranks when one is due, and a verdict that
// appears or changes said on stderr (the whole block, or one line when the job is to stop on it),
// kept in the job's stacks directory (hang.txt) and given to the JobWatch as a finding (summary,
// history). A step or working ranks clear it, said in one line.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hang/hang_watch.hpp"
#include "hang/rank_probe.hpp"
#include "run/job_watch.hpp"

namespace baton::run {

class JobHangs {
  public:
    // `who`: "baton launch"; `stacks_dir`: where hang.txt goes ("": not kept); `stop_on_hang`: on_hang = stop.
    JobHangs(hang::HangWatchOptions options, bool stop_on_hang, std::string who, std::string stacks_dir);

    // The job's processes were (re)started now: steps and looks of the last ones are forgotten.
    void restart();

    // One turn; `ranks` is asked only when a look is due. True once, when the verdict appears and
    // the job is to stop on it.
    bool turn(JobWatch& watch, const std::function<std::vector<hang::ProbedRank>()>& ranks);

    // The last verdict said (cleared or not).
    const std::optional<hang::HangVerdict>& last_verdict() const { return last_; }

  private:
    hang::HangWatch watch_;
    hang::HangWatchOptions options_;
    bool stop_on_hang_;
    std::string who_, stacks_dir_;
    std::int64_t started_ms_ = 0;
    std::optional<hang::HangVerdict> last_;
};

}  // namespace baton::run
