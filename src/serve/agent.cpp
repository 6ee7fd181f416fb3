#include "serve/agent.hpp"

#include <algorithm>

#include "core/clock.hpp"
#include "diagnose/rules.hpp"
#include "diagnose/series.hpp"

namespace baton::serve {

Agent::Agent(AgentOptions options) : options_(std::move(options)), thresholds_(options_.thresholds) {
    state_.findings = std::make_shared<const std::vector<Finding>>();
    state_.indicators = std::make_shared<const std::vector<IndicatorSummary>>();
}

Agent::~Agent() {
    stop();
}

void Agent::start() {
    thread_ = std::thread([this] { loop(); });
}

void Agent::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

AgentState Agent::state() const {
    std::lock_guard lock(mutex_);
    return state_;
}

void Agent::set_thresholds(const Thresholds& t) {
    std::lock_guard lock(mutex_);
    thresholds_ = t;
}

void Agent::loop() {
    SamplerOptions o = options_.sampler;
    o.priming_seconds = std::min(0.5, options_.interval_seconds);
    Sampler sampler(o);
    SampleSchedule schedule(options_.interval_seconds);
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            const double wait = schedule.next() - monotonic_seconds();
            if (wait > 0) wake_.wait_for(lock, std::chrono::duration<double>(wait), [this] { return stopping_; });
            if (stopping_) return;
        }
        tick(sampler);
        schedule.taken(monotonic_seconds());
    }
}

void Agent::tick(Sampler& sampler) {
    const double started = monotonic_seconds();
    auto snap = std::make_shared<Snapshot>();
    sampler.take(*snap);
    const double took = monotonic_seconds() - started;

    Thresholds t;
    {
        std::lock_guard lock(mutex_);
        t = thresholds_;
    }
    window_.push_back(*snap);
    const double oldest = seconds(window_.back()) - t.window_seconds;
    window_.erase(window_.begin(), std::find_if(window_.begin(), window_.end(),
                                                [&](const Snapshot& x) { return seconds(x) >= oldest; }));
    auto findings = std::make_shared<const std::vector<Finding>>(diagnose(window_, t));
    auto indicators = std::make_shared<const std::vector<IndicatorSummary>>(summarize_indicators(window_, t));
    DiagnosisInfo info = diagnosis_info(window_, "live");

    std::lock_guard lock(mutex_);
    // A finding "begins" when its (rule, subject) was not active at the previous tick.
    for (const Finding& f : *findings) {
        const bool was = std::any_of(state_.findings->begin(), state_.findings->end(), [&](const Finding& p) {
            return p.rule == f.rule && p.subject == f.subject && p.severity == f.severity;
        });
        if (!was) ++state_.findings_started[{f.rule, f.severity}];
    }
    state_.snapshot = std::move(snap);
    state_.findings = std::move(findings);
    state_.indicators = std::move(indicators);
    state_.window = std::move(info);
    state_.samples += 1;
    state_.last_sample_seconds = took;
    state_.last_sample_monotonic = monotonic_seconds();
}

}  // namespace baton::serve
