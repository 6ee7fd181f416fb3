// The turn of watching a job that `baton run` (and so each of `baton tune`'s trials) and `baton
// launch` share, written once: the stop signals baton got, the hook's events (taken first each turn:
// an out-of-memory capture comes before its error's line), the job's stderr read for failures, the
// machine sampled on schedule into the window and judged by the job's JobWatch, and the new findings
// said on stderr, at most one line every 5 s. The caller keeps what is its own: starting its
// processes, passing their output on, the hang verdict's look at its ranks, and ending its tree
// (os::TreeEnd).
#pragma once

#include <csignal>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "diagnose/finding.hpp"
#include "diagnose/series.hpp"
#include "run/events_socket.hpp"
#include "run/job_watch.hpp"
#include "sample/sampler.hpp"

namespace baton::run {

// SIGINT, SIGTERM and SIGHUP are caught from now on: a watch passes them on to the job instead of
// dying with its processes left behind.
void catch_stop_signals();
// The stop signal caught since the last call (0: none).
int take_stop_signal();
// The last stop signal caught since the process started (0: none): `baton tune` stops between trials.
int stop_signal_received();

class WatchStep {
  public:
    struct Options {
        SamplerOptions sampler;  // the Sampler is made at the first sample: loading NVML does not delay the job's start
        double interval_seconds = 1;
        double window_seconds = 30;
        bool quiet = false;  // no finding is said while it runs
        // Called with each new snapshot before the window is judged (`baton run --tune-live`); its
        // findings join the job's.
        std::function<std::vector<diagnose::Finding>(const Snapshot&)> on_sample;
    };

    // `events`: the hook's socket, or null when it could not be opened.
    WatchStep(JobWatch& watch, EventsSocket* events, Options options);

    // The hook's events since the last call, judged; the non-info findings are said.
    void take_events();
    // Bytes of the job's stderr, read for failures: a failure found is said before anything waiting.
    void read_output(std::string_view bytes);

    enum class Sampled {
        not_due,    // no sample was due at `now`
        judged,     // a sample was taken, added to the window and judged: new_findings()
        job_ended,  // the first sample spans the sampler's priming read and `running()` said the job
                    // ended within it: the job was never seen running, and the sample (the machine
                    // after it) was dropped
    };
    // A sample when one is due. `running`: asked after the first sample only.
    Sampled sample(double now, const std::function<bool()>& running = {});
    // The findings the last judged sample found for the first time (the caller's own reactions:
    // `baton run --profile=auto`).
    const std::vector<diagnose::Finding>& new_findings() const { return new_findings_; }
    const diagnose::Window& window() const { return window_; }
    // The sampler once made (null before the first sample).
    Sampler* sampler() { return sampler_ ? &*sampler_ : nullptr; }

    // A line said in its turn, after those waiting.
    void say(std::string line) { waiting_.push_back(std::move(line)); }
    // The first waiting line, when 5 s have passed since the last.
    void speak(double now);
    // Every line still waiting, at the end.
    void speak_rest();

    // How long the loop may wait before its next turn: at most 20 ms, less when a sample is due sooner.
    double wait_seconds() const;

  private:
    JobWatch& watch_;
    EventsSocket* events_;
    Options o_;
    std::optional<Sampler> sampler_;
    diagnose::Window window_;
    SampleSchedule schedule_;
    std::vector<diagnose::Finding> new_findings_;
    std::deque<std::string> waiting_;  // lines waiting for the rate limit
    double last_said_ = -1e9;
};

}  // namespace baton::run
