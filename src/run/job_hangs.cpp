#include "run/job_hangs.hpp"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/printable.hpp"
#include "hang/hang_verdict.hpp"
#include "hang/stack_request.hpp"

namespace baton::run {

namespace {

constexpr double kFrRefreshSeconds = 30;  // a new request at most this often
constexpr double kFrWaitSeconds = 8;      // for the dumps after a request (PyTorch polls its pipe every second)
constexpr double kFrReadSeconds = 10;     // the reader, at most
constexpr double kFrFreshSeconds = 90;    // an older judgement is not carried into a look

using Stacks = std::map<int, std::vector<hang::PyFrame>>;

Stacks stacks_of(const hang::Look& l) {
    Stacks out;
    for (const hang::RankLook& r : l.ranks)
        if (r.alive && r.has_stacks) out[r.rank] = r.frames;
    return out;
}

// Whether the ranks in `which` (every rank when null) have the same stacks in both (a rank without
// stacks in one of them aside).
bool stayed(const Stacks& then, const Stacks& now, const std::map<int, hang::FrEntry>* which) {
    for (const auto& [rank, frames] : now) {
        if (which && !which->count(rank)) continue;
        if (auto it = then.find(rank); it != then.end() && it->second != frames) return false;
    }
    return true;
}

// The ranks' reasons, each said once: "rank 0: A; ranks 1, 2: B", or just "A" when all share it.
std::string reasons_text(const std::map<int, std::string>& why) {
    std::map<std::string, std::vector<int>> by;
    for (const auto& [rank, w] : why) by[w].push_back(rank);
    if (by.size() == 1) return by.begin()->first;
    std::string out;
    for (const auto& [w, ranks] : by) {
        std::string rs;
        for (int r : ranks) rs += (rs.empty() ? "" : ", ") + std::to_string(r);
        out += (out.empty() ? "" : "; ") + std::string(ranks.size() == 1 ? "rank " : "ranks ") + rs + ": " + w;
    }
    return out;
}

}  // namespace

JobHangs::JobHangs(hang::HangWatchOptions options, bool stop_on_hang, std::string who, std::string stacks_dir,
                   hang::FlightRecorderPaths fr)
    : watch_(options),
      options_(options),
      stop_on_hang_(stop_on_hang),
      who_(std::move(who)),
      stacks_dir_(std::move(stacks_dir)),
      started_ms_(unix_millis()),
      fr_(std::move(fr)) {}

void JobHangs::restart() {
    watch_ = hang::HangWatch(options_);
    started_ms_ = unix_millis();
    fr_request_.reset();
    fr_result_.reset();
    previous_.reset();
}

void JobHangs::collect_flight_recorder(double now) {
    const bool ready = hang::flight_recorder_dumps_ready(fr_, *fr_request_, unix_millis() * 1'000'000);
    if (!ready && now - fr_requested_at_ < kFrWaitSeconds) return;
    std::vector<std::pair<int, std::string>> files;
    for (int rank : fr_request_->asked) files.emplace_back(rank, fr_.dump_prefix + std::to_string(rank));
    const pid_t first = fr_pids_.count(fr_request_->asked.front()) ? fr_pids_[fr_request_->asked.front()] : 0;
    hang::FrCollection c = hang::read_flight_recorder_dumps(
        fr_python_.empty() ? hang::interpreter_of(first) : fr_python_, files, fr_request_->at_unix_ns, kFrReadSeconds);
    c.no_dump.insert(fr_request_->not_asked.begin(), fr_request_->not_asked.end());
    FrResult r;
    r.at = fr_requested_at_;
    r.basis = fr_basis_;
    r.last_step_ms = fr_step_ms_;
    for (const hang::FrDump& d : c.dumps)
        if (std::optional<hang::FrEntry> p = hang::oldest_pending(d)) r.pending[d.rank] = *p;
    std::vector<int> local;
    for (const auto& [rank, pid] : fr_pids_) local.push_back(rank);
    r.verdict = hang::judge_flight_recorder(c.dumps, local, options_.multi_node);
    if (r.verdict && !c.no_dump.empty())
        r.verdict->summary += " (no dump from " + reasons_text(c.no_dump) + ")";
    else if (!r.verdict)
        r.none = c.dumps.empty() ? "no Flight Recorder dump: " + reasons_text(c.no_dump)
                                 : "the Flight Recorder dumps have no collective pending";
    fr_result_ = std::move(r);
    fr_request_.reset();
}

void JobHangs::attach_flight_recorder(hang::Look& look, std::int64_t last_step_ms) const {
    if (!fr_result_ || look.at - fr_result_->at > kFrFreshSeconds || last_step_ms > fr_result_->last_step_ms) return;
    // A rank that waited then and has moved since: the dumps no longer say where the ranks are.
    if (!stayed(fr_result_->basis, stacks_of(look), &fr_result_->pending)) return;
    for (hang::RankLook& r : look.ranks)
        if (auto it = fr_result_->pending.find(r.rank); it != fr_result_->pending.end()) r.fr_pending = it->second;
    look.flight_recorder = fr_result_->verdict;
    look.flight_recorder_none = fr_result_->none;
}

void JobHangs::maybe_request_flight_recorder(const hang::Look& look, std::int64_t last_step_ms, double now) {
    if (fr_request_) return;
    const Stacks now_stacks = stacks_of(look);
    if (fr_result_ && now - fr_result_->at < kFrRefreshSeconds && last_step_ms <= fr_result_->last_step_ms &&
        stayed(fr_result_->basis, now_stacks, &fr_result_->pending))
        return;
    std::vector<int> ranks;
    fr_pids_.clear();
    for (const hang::RankLook& r : look.ranks)
        if (r.alive) {
            ranks.push_back(r.rank);
            fr_pids_[r.rank] = r.pid;
        }
    if (ranks.empty()) return;
    fr_basis_ = now_stacks;
    fr_requested_at_ = now;
    fr_step_ms_ = last_step_ms;
    if (!fr_.enabled) {
        fr_result_ =
            FrResult{now, now_stacks, last_step_ms, {}, std::nullopt, "the Flight Recorder is off: " + fr_.off_reason};
        return;
    }
    hang::FrRequest req = hang::request_flight_recorder_dumps(fr_, ranks);
    if (req.asked.empty()) {  // gloo, an older PyTorch: said at once
        fr_result_ = FrResult{now, now_stacks, last_step_ms, {}, std::nullopt, reasons_text(req.not_asked)};
        return;
    }
    fr_request_ = std::move(req);
}

JobHangs::Steps JobHangs::steps_of(JobWatch& watch) {
    return {watch.last_step_unix_ms(), watch.median_step_seconds()};
}

void JobHangs::give(JobWatch& watch, const Said& said) {
    if (!said.finding) return;
    watch.add_finding(*said.finding);
    watch.record_hang(said.rule, said.text);
}

JobHangs::Said JobHangs::step(const Steps& steps, const std::function<std::vector<hang::ProbedRank>()>& ranks) {
    // Steps of an earlier attempt say nothing about this one's.
    const std::int64_t last_step = steps.last_step_unix_ms;
    watch_.steps(last_step >= started_ms_ ? last_step : 0, steps.median_step_seconds);
    const double now = monotonic_seconds();
    if (fr_request_) collect_flight_recorder(now);
    if (!watch_.look_due(now, unix_millis())) return {};
    hang::Look look = hang::look_at_ranks(ranks(), true, now);
    const std::int64_t step = last_step >= started_ms_ ? last_step : 0;
    // Stuck-looking: quiet for hang_seconds since a step, or (no steps) no stack moved since the last look.
    const bool stuck = step ? static_cast<double>(unix_millis() - step) >= watch_.hang_seconds() * 1000
                            : previous_ && stayed(stacks_of(*previous_), stacks_of(look), nullptr);
    // Asked first: where no rank can be asked (gloo, an older PyTorch) that is known at once.
    if (stuck) maybe_request_flight_recorder(look, step, now);
    attach_flight_recorder(look, step);
    previous_ = look;
    std::optional<hang::HangWatch::Change> change = watch_.add_look(std::move(look));
    if (change && change->kind == hang::HangWatch::Change::Kind::appeared && stop_on_hang_ && fr_request_) {
        // The job is about to end: the dumps asked for are worth their few seconds, carried into the
        // look that made the verdict.
        while (fr_request_) {
            usleep(100'000);
            collect_flight_recorder(monotonic_seconds());
        }
        if (std::optional<hang::HangWatch::Change> c =
                watch_.amend_newest([&](hang::Look& l) { attach_flight_recorder(l, step); })) {
            if (c->kind == hang::HangWatch::Change::Kind::changed) c->kind = hang::HangWatch::Change::Kind::appeared;
            change = std::move(c);
        }
    }
    if (!change) return {};
    if (change->kind == hang::HangWatch::Change::Kind::cleared) {
        std::fprintf(stderr, "%s: the ranks make progress again: the hang verdict is cleared\n", who_.c_str());
        return {};
    }
    const hang::HangVerdict& v = *change->verdict;
    Said said{hang::hang_finding(v, watch_.hang_seconds()), v.rule, hang::hang_text(v, who_),
              stop_on_hang_ && change->kind == hang::HangWatch::Change::Kind::appeared};
    if (!stacks_dir_.empty()) (void)write_file_atomically(stacks_dir_ + "/hang.txt", said.text);
    last_ = v;
    if (said.stop)  // the whole block comes with the summary, as the root cause
        std::fprintf(stderr, "%s: %s: stopping the job (on_hang = \"stop\")\n", who_.c_str(), v.rule.c_str());
    else
        std::fputs(printable_text(said.text).c_str(), stderr);
    return said;
}

std::optional<diagnose::Finding> JobHangs::active_finding() const {
    if (!watch_.verdict()) return std::nullopt;
    return hang::hang_finding(*watch_.verdict(), watch_.hang_seconds());
}

std::vector<hang::ProbedRank> job_ranks(pid_t root, bool steps_seen) {
    std::vector<hang::ProbedRank> out;
    const std::vector<hang::StackTarget> found = hang::stack_targets_under(root, true);
    const bool ranked = std::any_of(found.begin(), found.end(), [](const hang::StackTarget& t) { return t.rank; });
    if (!ranked && !steps_seen) return out;
    for (const hang::StackTarget& t : found)
        out.push_back({t.rank.value_or(static_cast<int>(out.size())), t.pid, true, 0, 0});
    return out;
}

}  // namespace baton::run
