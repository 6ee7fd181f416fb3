#include "serve/sampling_loop.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "core/clock.hpp"
#include "core/thread_name.hpp"
#include "diagnose/rules.hpp"
#include "diagnose/series.hpp"
#include "store/history_metrics.hpp"
#include "store/history_usage.hpp"

namespace baton::serve {

SamplingLoop::SamplingLoop(SamplingOptions options, std::optional<store::History> store)
    : options_(std::move(options)),
      thresholds_(options_.thresholds),
      retention_seconds_(options_.retention_seconds),
      idle_allocated_minutes_(options_.idle_allocated_minutes),
      memory_(options_.memory_seconds, options_.interval_seconds),
      store_(std::move(store)) {
    state_.findings = std::make_shared<const std::vector<diagnose::Finding>>();
    state_.indicators = std::make_shared<const std::vector<diagnose::IndicatorSummary>>();
}

SamplingLoop::~SamplingLoop() {
    stop();
}

void SamplingLoop::start() {
    thread_ = std::thread([this] {
        name_this_thread("baton-agent");
        loop();
    });
}

void SamplingLoop::stop() {
    {
        MutexLock lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

SampledTick SamplingLoop::state() const {
    MutexLock lock(mutex_);
    return state_;
}

void SamplingLoop::set_thresholds(const Thresholds& t) {
    MutexLock lock(mutex_);
    thresholds_ = t;
}

void SamplingLoop::set_retention(double seconds) {
    MutexLock lock(mutex_);
    retention_seconds_ = seconds;
}

void SamplingLoop::set_idle_allocated_minutes(double minutes) {
    MutexLock lock(mutex_);
    idle_allocated_minutes_ = minutes;
}

std::optional<diagnose::JobUse> SamplingLoop::job_use(const std::string& job) const {
    MutexLock lock(job_usage_mutex_);
    return job_usage_.find(job);
}

std::vector<diagnose::JobUse> SamplingLoop::job_uses() const {
    MutexLock lock(job_usage_mutex_);
    return job_usage_.all();
}

std::vector<store::UsageRecord> SamplingLoop::usage_records() const {
    MutexLock lock(job_usage_mutex_);
    return usage_stretches_.current(job_usage_.all());
}

// Writes the minutes that ended, and once an hour deletes those past the retention. A write that
// fails (a full disk) is said once, kept (up to a day of minutes) and tried again each minute.
void SamplingLoop::store_minutes(std::int64_t now_ms) {
    std::vector<store::MetricMinute> rows = memory_.take_finished_minutes(now_ms);
    if (!store_) return;
    if (rows.empty() && unsaved_.empty()) return;
    unsaved_.insert(unsaved_.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
    constexpr std::size_t kMaxUnsaved = 1440 * 128;
    if (unsaved_.size() > kMaxUnsaved)
        unsaved_.erase(unsaved_.begin(), unsaved_.begin() + static_cast<std::ptrdiff_t>(unsaved_.size() - kMaxUnsaved));
    if (Status s = store_->minute_table().add_metric_minutes(unsaved_); !s.ok()) {
        if (!store_failing_)
            std::fprintf(
                stderr,
                "baton: cannot record the machine history in %s: %s; baton serve goes on and tries again each minute\n",
                store_->path().c_str(), s.error().message.c_str());
        store_failing_ = true;
        return;
    }
    if (store_failing_)
        std::fprintf(stderr, "baton: recording the machine history in %s again\n", store_->path().c_str());
    store_failing_ = false;
    unsaved_.clear();
    const double now = monotonic_seconds();
    if (now - pruned_at_ >= 3600) {
        pruned_at_ = now;
        double retention;
        {
            MutexLock lock(mutex_);
            retention = retention_seconds_;
        }
        const std::int64_t before = (now_ms - static_cast<std::int64_t>(retention * 1000)) / 60000;
        if (Result<std::int64_t> pruned = store_->minute_table().prune_metric_minutes(before); !pruned.ok())
            std::fprintf(stderr, "baton: cannot delete the machine history past its retention in %s: %s\n",
                         store_->path().c_str(), pruned.error().message.c_str());
        if (Result<std::int64_t> pruned = store_->usage_table().prune_usage(before * 60000); !pruned.ok())
            std::fprintf(stderr, "baton: cannot delete the usage past its retention in %s: %s\n",
                         store_->path().c_str(), pruned.error().message.c_str());
    }
}

// baton usage's records: every job whose figures changed, each minute (and when the agent stops);
// a job that left, at once. Records a failed write left (a full disk) go again with the next one,
// a newer record of the same stretch replacing its older one (at most a day's worth are kept).
void SamplingLoop::store_usage(std::int64_t now_ms, bool all) {
    if (!store_) return;
    std::vector<store::UsageRecord> rows;
    {
        MutexLock lock(job_usage_mutex_);
        const bool minute = all || now_ms - usage_written_ms_ >= 60000;
        if (!minute && job_usage_.endings() == usage_endings_) return;
        usage_endings_ = job_usage_.endings();
        if (minute) usage_written_ms_ = now_ms;
        rows = usage_stretches_.take(job_usage_.all(), now_ms, !minute);
    }
    if (!usage_unsaved_.empty()) rows = store::with_newer_stretches(std::move(usage_unsaved_), rows);
    usage_unsaved_.clear();
    if (Status s = store_->usage_table().put_usage(rows); !s.ok()) {
        if (!store_failing_)
            std::fprintf(stderr, "baton: cannot record the jobs' usage in %s: %s\n", store_->path().c_str(),
                         s.error().message.c_str());
        constexpr std::size_t kMaxUnsavedUsage = 24 * 60 * 64;
        if (rows.size() > kMaxUnsavedUsage)
            rows.erase(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(rows.size() - kMaxUnsavedUsage));
        usage_unsaved_ = std::move(rows);
    }
}

void SamplingLoop::loop() {
    SamplerOptions o = options_.sampler;
    o.priming_seconds = std::min(0.5, options_.interval_seconds);
    Sampler sampler(o);
    SampleSchedule schedule(options_.interval_seconds);
    for (;;) {
        {
            UniqueLock lock(mutex_);
            const double wait = schedule.next() - monotonic_seconds();
            if (wait > 0)
                wake_.wait_for(lock, std::chrono::duration<double>(wait),
                               [this]() BATON_REQUIRES(mutex_) { return stopping_; });
            if (stopping_) break;
        }
        tick(sampler);
        schedule.taken(monotonic_seconds());
    }
    // The minute under way goes to the database as it is (a restart within that minute writes
    // it again, from its own samples), and so do the jobs' figures.
    store_minutes(unix_millis() + 60000);
    store_usage(unix_millis(), true);
}

void SamplingLoop::tick(Sampler& sampler) {
    const double started = monotonic_seconds();
    // The snapshot published two ticks ago is sampled into again once no reader holds it (only
    // this thread can hand it out, and it no longer does: the count can only fall).
    if (!spare_ || spare_.use_count() != 1) {
        spare_ = std::make_shared<Snapshot>();
    } else {
        std::atomic_thread_fence(std::memory_order_acquire);  // the readers' last uses happen before
        // Only the process table and the GPUs keep their storage (the sampler rewrites every slot);
        // everything else starts as in a new snapshot, so a file that cannot be read leaves a gap,
        // not the values of two ticks ago.
        std::vector<ProcessInfo> processes = std::move(spare_->processes);
        std::vector<GpuInfo> gpus = std::move(spare_->gpus);
        *spare_ = Snapshot{};
        spare_->processes = std::move(processes);
        spare_->gpus = std::move(gpus);
    }
    sampler.take(*spare_);
    std::swap(current_, spare_);
    const double took = monotonic_seconds() - started;

    Thresholds t;
    double idle_minutes = 0;
    {
        MutexLock lock(mutex_);
        t = thresholds_;
        idle_minutes = idle_allocated_minutes_;
    }
    memory_.add(*current_);
    store_minutes(current_->time_unix_ms);
    window_.add(*current_, t.window_seconds);
    const diagnose::Window& window = window_.snapshots();
    std::vector<diagnose::Finding> found = diagnose::diagnose(window, t);
    for (diagnose::Finding& f : idle_allocations_.update(*current_, idle_minutes)) found.push_back(std::move(f));
    auto indicators =
        std::make_shared<const std::vector<diagnose::IndicatorSummary>>(diagnose::summarize_indicators(window, t));
    report::DiagnosisInfo info = report::diagnosis_info(window, "live");
    std::vector<diagnose::OtherJob> others;
    if (options_.on_tick) options_.on_tick(window, found, others);
    auto findings = std::make_shared<const std::vector<diagnose::Finding>>(std::move(found));
    {
        MutexLock lock(job_usage_mutex_);
        job_usage_.update(*current_, *findings, others);
    }
    store_usage(current_->time_unix_ms, false);

    MutexLock lock(mutex_);
    // A finding "begins" when its (rule, subject) was not active at the previous tick.
    for (const diagnose::Finding& f : *findings) {
        const bool was = std::any_of(state_.findings->begin(), state_.findings->end(), [&](const diagnose::Finding& p) {
            return p.rule == f.rule && p.subject == f.subject && p.severity == f.severity;
        });
        if (!was) ++state_.findings_started[{f.rule, f.severity}];
    }
    state_.snapshot = current_;
    state_.findings = std::move(findings);
    state_.indicators = std::move(indicators);
    state_.window = std::move(info);
    state_.samples += 1;
    state_.last_sample_seconds = took;
    state_.last_sample_monotonic = monotonic_seconds();
}

}  // namespace baton::serve
