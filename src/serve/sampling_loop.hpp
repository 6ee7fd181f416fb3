// The SamplingLoop: baton serve's sampling half. A thread takes a snapshot every interval, keeps the
// last window_seconds of them for the diagnosis rules (the same diagnose() and thresholds as
// baton diagnose), and publishes the latest snapshot and the active findings for the HTTP
// thread to read. Readers copy shared pointers under a lock and format outside it, so a slow
// scrape never delays a sample and a sample never waits for a scrape.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/thread_safety.hpp"
#include "core/thresholds.hpp"
#include "diagnose/finding.hpp"
#include "diagnose/idle_allocated.hpp"
#include "diagnose/indicators.hpp"
#include "diagnose/job_usage.hpp"
#include "report/findings_view.hpp"
#include "serve/diagnosis_window.hpp"
#include "serve/metric_history.hpp"
#include "store/history.hpp"
#include "store/usage_records.hpp"
#include "sample/sampler.hpp"
#include "sample/snapshot.hpp"

namespace baton::serve {

struct SamplingOptions {
    SamplerOptions sampler;
    double interval_seconds = 1;
    Thresholds thresholds;
    double memory_seconds = 900;              // the full-resolution ring (15 min)
    double retention_seconds = 30 * 86400.0;  // minutes older than this leave the database
    double idle_allocated_minutes = 60;       // gpu_idle_allocated after this long at 0 % (0: off)
    // Called on the sampling thread after each sample with the diagnosis window (the queue's job
    // watches are fed from it) and the tick's findings so far, which it may add to (the queued jobs'
    // hang verdicts) and take from (gpu_idle_held of a job the queue paused); must not block for long.
    // It may also name jobs the agent's cgroups do not (the queue's), for the usage (OtherJob).
    std::function<void(const diagnose::Window&, std::vector<diagnose::Finding>&, std::vector<diagnose::OtherJob>&)>
        on_tick;
};

// What the HTTP thread reads: one consistent tick.
struct SampledTick {
    std::shared_ptr<const Snapshot> snapshot;  // null before the first sample
    std::shared_ptr<const std::vector<diagnose::Finding>> findings;
    std::shared_ptr<const std::vector<diagnose::IndicatorSummary>> indicators;
    report::DiagnosisInfo window;  // the window the findings were judged over
    // Findings that began (rule, severity) -> count, since the agent started.
    std::map<std::pair<std::string, diagnose::Severity>, std::uint64_t> findings_started;
    std::uint64_t samples = 0;
    double last_sample_seconds = 0;    // how long the last sample took (CPU and NVML waits)
    double last_sample_monotonic = 0;  // CLOCK_MONOTONIC when it was taken
};

class SamplingLoop {
  public:
    // `store`: the history database the minutes go to (written on the sampling thread only), or none.
    SamplingLoop(SamplingOptions options, std::optional<store::History> store);
    ~SamplingLoop();  // stops the thread
    SamplingLoop(const SamplingLoop&) = delete;
    SamplingLoop& operator=(const SamplingLoop&) = delete;

    void start();
    // Ends the sampling thread (within one sample's time) and waits for it.
    void stop();

    SampledTick state() const;
    // New thresholds (SIGHUP), used from the next tick.
    void set_thresholds(const Thresholds& t);
    void set_retention(double seconds);
    void set_idle_allocated_minutes(double minutes);

    // The last minutes of every metric (it locks itself: safe from any thread).
    const MetricHistory& memory() const { return memory_; }

    // What each job did with what it was given here, while it runs and for an hour after it left
    // (baton jobstats, the Slurm epilog); by label ("slurm:1234") or id. Safe from any thread.
    std::optional<diagnose::JobUse> job_use(const std::string& job) const;
    std::vector<diagnose::JobUse> job_uses() const;
    // Each of those jobs' current stretch as a usage record (baton usage's live figures). Any thread.
    std::vector<store::UsageRecord> usage_records() const;

  private:
    void loop();
    void tick(Sampler& sampler);
    void store_minutes(std::int64_t now_ms);
    void store_usage(std::int64_t now_ms, bool all);

    SamplingOptions options_;
    // The sampling thread publishes, readers (HTTP, the queue) copy; SIGHUP's reload sets.
    mutable Mutex mutex_;
    std::condition_variable_any wake_;
    bool stopping_ BATON_GUARDED_BY(mutex_) = false;
    SampledTick state_ BATON_GUARDED_BY(mutex_);
    Thresholds thresholds_ BATON_GUARDED_BY(mutex_);
    std::thread thread_;
    double retention_seconds_ BATON_GUARDED_BY(mutex_);
    double idle_allocated_minutes_ BATON_GUARDED_BY(mutex_);
    MetricHistory memory_;
    // The sampling thread's own.
    DiagnosisWindow window_;
    diagnose::IdleAllocations idle_allocations_;
    mutable Mutex job_usage_mutex_;  // the sampling thread updates, HTTP reads
    diagnose::JobUsageTracker job_usage_ BATON_GUARDED_BY(job_usage_mutex_);
    // The snapshot being filled and the one published before: sampling into a snapshot that held
    // the same processes lets the process table reuse its storage and strings (sample/sampler.hpp).
    std::shared_ptr<Snapshot> current_, spare_;
    std::optional<store::History> store_;
    std::vector<store::MetricMinute> unsaved_;  // minutes a failed write left, tried again next time
    // baton usage's records: written each minute, and at once when a job leaves (the sampling thread
    // writes; usage_records() reads the stretches under way).
    store::UsageStretches usage_stretches_ BATON_GUARDED_BY(job_usage_mutex_);
    std::vector<store::UsageRecord> usage_unsaved_;  // those a failed write left
    std::int64_t usage_written_ms_ = 0;
    std::uint64_t usage_endings_ = 0;
    bool store_failing_ = false;
    double pruned_at_ = -1e9;  // monotonic seconds of the last retention pass
};

}  // namespace baton::serve
