#include "tune/live_tuner.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

namespace baton::tune {

std::string live_label(const LiveSetting& s) {
    return fmt::format("num_workers={} prefetch_factor={}", s.num_workers, s.prefetch_factor);
}

LiveTuner::LiveTuner(unsigned cpus) : cpus_(std::max(1u, cpus)) {}

TrialMeasure LiveTuner::Phase::measure() const {
    // The latest kPhaseSteps after its first kSettleSteps: a loader that got slower since the phase began
    // is judged as it is now.
    if (steps.size() <= kSettleSteps) return {};
    const std::size_t from = std::max(kSettleSteps, steps.size() > kPhaseSteps ? steps.size() - kPhaseSteps : 0);
    return tune::measure(steps, from, steps.size() - from);
}

void LiveTuner::say(std::string line) {
    lines_.push_back(line);
    history_.push_back(std::move(line));
}

void LiveTuner::loader(const LoaderFacts& f) {
    if (current_) return;
    Phase p;
    p.setting = {f.num_workers, f.prefetch_factor.value_or(2)};
    p.from_step = steps_;
    current_ = std::move(p);
}

void LiveTuner::step(const TrialStep& s) {
    ++steps_;
    if (!current_) return;
    current_->steps.push_back(s);
    // Only the latest steps are ever measured: a long run keeps a bounded window.
    if (current_->steps.size() > 4 * (kSettleSteps + kPhaseSteps)) {
        auto& v = current_->steps;
        v.erase(v.begin() + static_cast<std::ptrdiff_t>(kSettleSteps),
                v.begin() + static_cast<std::ptrdiff_t>(v.size() - kPhaseSteps));
    }
}

void LiveTuner::cpu_busy(double share) {
    cpu_busy_ = share;
}

void LiveTuner::applied(const LiveSetting& s) {
    if (!asked_ || !(s == *asked_) || !current_) return;
    asked_.reset();
    if (reverting_) {
        current_ = Phase{s, steps_, {}};
        done_ = true;
        return;
    }
    previous_ = std::move(current_);
    current_ = Phase{s, steps_, {}};
}

std::optional<LiveSetting> LiveTuner::next_from(const Phase& p) const {
    const TrialMeasure m = p.measure();
    const int cpus = static_cast<int>(cpus_);
    LiveSetting s = p.setting;
    if (m.data_wait_share >= kWaitWorthTuning && cpu_busy_ < 0.9) {
        if (s.num_workers < cpus) {  // 0 -> 1 -> 2 -> 4 ...: doubling, at most the CPUs
            s.num_workers = std::min(cpus, std::max(s.num_workers + 1, 2 * s.num_workers));
            return s;
        }
        if (s.num_workers > 0 && s.prefetch_factor < 4) {
            s.prefetch_factor = 4;
            return s;
        }
        return std::nullopt;
    }
    // The CPUs starve the step: the loop no longer waits, the CPUs are saturated, and the workers
    // outnumber what the CPUs can give beside the training process.
    if (m.data_wait_share < kWaitWorthTuning && cpu_busy_ >= 0.95 && s.num_workers > 1 && s.num_workers >= cpus) {
        s.num_workers = std::max(1, cpus - 1);
        return s;
    }
    return std::nullopt;
}

bool LiveTuner::Phase::steady() const {
    // The latest two windows of 10 steps agree within warmup.hpp's tolerance: the loop is in a steady
    // state, so what the phase measures is this setting's, not a change of the data's speed in its middle.
    const WarmupRule rule;
    if (steps.size() < kSettleSteps + 2 * rule.window) return false;
    double a = 0, b = 0;
    const std::size_t n = steps.size(), w = rule.window;
    for (std::size_t i = n - 2 * w; i < n - w; ++i) a += steps[i].step_ms;
    for (std::size_t i = n - w; i < n; ++i) b += steps[i].step_ms;
    return b > 0 ? std::abs(a - b) <= rule.tolerance * b : a <= 0;
}

std::optional<LiveSetting> LiveTuner::decide() {
    if (done_ || asked_ || !current_ || current_->steps.size() < kSettleSteps + kPhaseSteps || !current_->steady())
        return std::nullopt;
    const TrialMeasure now = current_->measure();
    if (previous_) {
        const TrialMeasure before = previous_->measure();
        const double gain = before.steps_per_second > 0 ? now.steps_per_second / before.steps_per_second - 1 : 0;
        const std::string change = fmt::format(
            "{} -> {} at step {}: {:.1f} -> {:.1f} steps/s ({:+.0f} %), data wait {:.0f} % -> {:.0f} %",
            live_label(previous_->setting), live_label(current_->setting), current_->from_step, before.steps_per_second,
            now.steps_per_second, 100 * gain, 100 * before.data_wait_share, 100 * now.data_wait_share);
        if (gain <= kMinGain) {
            say(change + fmt::format(": not {:.0f} % better, back to {} at the next epoch", 100 * kMinGain,
                                     live_label(previous_->setting)));
            reverting_ = true;
            asked_ = previous_->setting;
            previous_.reset();
            return asked_;
        }
        say(change + ": kept");
        previous_.reset();
    }
    if (std::optional<LiveSetting> next = next_from(*current_)) {
        asked_ = next;
        return next;
    }
    // Still waiting with nothing left to try: said once, and tuning ends. Not waiting: nothing to do now,
    // but a loader that gets slower later is tuned then.
    if (now.data_wait_share >= kWaitWorthTuning) {
        say(fmt::format("{}: data wait {:.0f} % of the step with the CPUs {:.0f} % busy: nothing more to try",
                        live_label(current_->setting), 100 * now.data_wait_share, 100 * cpu_busy_));
        done_ = true;
    }
    return std::nullopt;
}

std::vector<std::string> LiveTuner::take_lines() {
    std::vector<std::string> out;
    out.swap(lines_);
    return out;
}

}  // namespace baton::tune
