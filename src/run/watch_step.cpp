#include "run/watch_step.hpp"

#include <algorithm>
#include <cstdio>

#include "core/printable.hpp"

namespace baton::run {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_stop_received = 0;  // since the process started

void on_stop(int sig) {
    g_stop_signal = sig;
    g_stop_received = sig;
}

}  // namespace

void catch_stop_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

int take_stop_signal() {
    const int sig = g_stop_signal;
    g_stop_signal = 0;
    return sig;
}

int stop_signal_received() {
    return g_stop_received;
}

WatchStep::WatchStep(JobWatch& watch, EventsSocket* events, Options options)
    : watch_(watch), events_(events), o_(std::move(options)), schedule_(o_.interval_seconds) {
    o_.sampler.priming_seconds = std::min(0.1, o_.interval_seconds);
}

void WatchStep::take_events() {
    if (!events_) return;
    for (const diagnose::Finding& f : watch_.read_events(events_->drain()))
        if (!o_.quiet && f.severity != diagnose::Severity::info) say(finding_note(f));
}

void WatchStep::read_output(std::string_view bytes) {
    for (const diagnose::Finding& f : watch_.read_output(bytes))
        if (!o_.quiet) waiting_.push_front(finding_note(f));
}

WatchStep::Sampled WatchStep::sample(double now, const std::function<bool()>& running) {
    if (now < schedule_.next()) return Sampled::not_due;
    if (!sampler_) sampler_.emplace(o_.sampler);
    Snapshot snap;
    sampler_->take(snap);
    schedule_.taken(monotonic_seconds());
    if (watch_.stats().samples == 0 && running && !running()) return Sampled::job_ended;
    push_to_window(window_, std::move(snap), o_.window_seconds);
    new_findings_.clear();
    if (o_.on_sample)
        for (const diagnose::Finding& f : o_.on_sample(window_.back())) watch_.add_finding(f);
    for (diagnose::Finding& f : watch_.sample(window_)) {
        if (!o_.quiet && f.severity != diagnose::Severity::info) say(finding_note(f));
        new_findings_.push_back(std::move(f));
    }
    return Sampled::judged;
}

void WatchStep::speak(double now) {
    if (waiting_.empty() || now - last_said_ < 5) return;
    std::fprintf(stderr, "%s\n", printable(waiting_.front()).c_str());  // names from outside
    waiting_.pop_front();
    last_said_ = now;
}

void WatchStep::speak_rest() {
    for (const std::string& line : waiting_) std::fprintf(stderr, "%s\n", printable(line).c_str());
    waiting_.clear();
}

double WatchStep::wait_seconds() const {
    return std::min(0.02, std::max(0.0, schedule_.next() - monotonic_seconds()));
}

}  // namespace baton::run
