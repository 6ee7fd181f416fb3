#include "run/job_hangs.hpp"

#include <cstdio>

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/printable.hpp"
#include "hang/hang_verdict.hpp"

namespace baton::run {

JobHangs::JobHangs(hang::HangWatchOptions options, bool stop_on_hang, std::string who, std::string stacks_dir)
    : watch_(options),
      options_(options),
      stop_on_hang_(stop_on_hang),
      who_(std::move(who)),
      stacks_dir_(std::move(stacks_dir)),
      started_ms_(unix_millis()) {}

void JobHangs::restart() {
    watch_ = hang::HangWatch(options_);
    started_ms_ = unix_millis();
}

bool JobHangs::turn(JobWatch& watch, const std::function<std::vector<hang::ProbedRank>()>& ranks) {
    // Steps of an earlier attempt say nothing about this one's.
    const std::int64_t last_step = watch.last_step_unix_ms();
    watch_.steps(last_step >= started_ms_ ? last_step : 0, watch.median_step_seconds());
    const double now = monotonic_seconds();
    if (!watch_.look_due(now, unix_millis())) return false;
    const std::optional<hang::HangWatch::Change> change = watch_.add_look(hang::look_at_ranks(ranks(), true, now));
    if (!change) return false;
    if (change->kind == hang::HangWatch::Change::Kind::cleared) {
        std::fprintf(stderr, "%s: the ranks make progress again: the hang verdict is cleared\n", who_.c_str());
        return false;
    }
    const hang::HangVerdict& v = *change->verdict;
    const std::string text = hang::hang_text(v, who_);
    if (!stacks_dir_.empty()) (void)write_file_atomically(stacks_dir_ + "/hang.txt", text);
    watch.add_finding(hang::hang_finding(v, watch_.hang_seconds()));
    last_ = v;
    const bool stop = stop_on_hang_ && change->kind == hang::HangWatch::Change::Kind::appeared;
    if (stop)  // the whole block comes with the summary, as the root cause
        std::fprintf(stderr, "%s: %s: stopping the job (on_hang = \"stop\")\n", who_.c_str(), v.rule.c_str());
    else
        std::fputs(printable_text(text).c_str(), stderr);
    return stop;
}

}  // namespace baton::run
