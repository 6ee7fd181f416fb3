#include "store/history_writer.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <pthread.h>

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "core/thread_name.hpp"
#include "store/history_runs.hpp"

namespace baton::store {

namespace {

template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

HistoryWriter::HistoryWriter(std::string path, RunHeader header, Options options)
    : path_(options.shared ? options.shared->path() : std::move(path)),
      header_(std::move(header)),
      options_(std::move(options)) {
    report_.db_path = path_;
    // The signals (Ctrl-C for the command, SIGCHLD) are the main thread's: start the writer
    // with all of them blocked, so none lands in it.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    queue_.push_back({Begin{}, monotonic_seconds()});
    thread_ = std::thread([this] {
        name_this_thread("baton-history");
        loop();
    });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

HistoryWriter::~HistoryWriter() {
    {
        MutexLock lock(mutex_);
        stop_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void HistoryWriter::note(const std::string& line) {
    if (options_.say)
        options_.say(line);
    else
        std::fprintf(stderr, "%s\n", escaped_line(line).c_str());
}

void HistoryWriter::push(Write w) {
    {
        MutexLock lock(mutex_);
        if (stop_) return;
        // Full: the oldest of the same kind goes (samples and steps only; the machine, the
        // findings and the end are few and always kept).
        auto drop_oldest = [&](std::size_t kind) BATON_REQUIRES(mutex_) {
            auto it =
                std::find_if(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.write.index() == kind; });
            if (it == queue_.end()) return false;  // (the one on its way to the database stays)
            count_lost(it->write);
            queue_.erase(it);
            return true;
        };
        if (std::holds_alternative<RunSample>(w)) {
            while (queued_samples_ >= options_.max_queued_samples && drop_oldest(w.index())) {
            }
            ++queued_samples_;
        } else if (const auto* steps = std::get_if<std::vector<StepEvent>>(&w)) {
            while (queued_steps_ + steps->size() > options_.max_queued_steps && drop_oldest(w.index())) {
            }
            queued_steps_ += steps->size();
        }
        queue_.push_back({std::move(w), monotonic_seconds()});
    }
    changed_.notify_all();
}

// A write that left the queue without reaching the database.
void HistoryWriter::count_lost(const Write& w) {
    if (std::holds_alternative<Machine>(w)) {
        report_.machine_lost = true;
    } else if (std::holds_alternative<RunSample>(w)) {
        ++report_.samples_lost;
        --queued_samples_;
    } else if (const auto* s = std::get_if<std::vector<StepEvent>>(&w)) {
        report_.steps_lost += s->size();
        queued_steps_ -= s->size();
    } else if (std::holds_alternative<FindingAt>(w) || std::holds_alternative<HangAt>(w) ||
               std::holds_alternative<RecordedProfile>(w) || std::holds_alternative<RecordedOomCapture>(w)) {
        ++report_.findings_lost;  // a hang verdict's text, a profile's trace, a capture: their findings' records
    }
}

void HistoryWriter::set_machine(unsigned cpu_count, std::uint64_t memory_total_bytes, std::vector<RunGpu> gpus) {
    push(Machine{cpu_count, memory_total_bytes, std::move(gpus)});
}

void HistoryWriter::add_sample(RunSample s) {
    push(std::move(s));
}

void HistoryWriter::add_steps(std::vector<StepEvent> steps) {
    if (!steps.empty()) push(std::move(steps));
}

void HistoryWriter::add_finding(std::int64_t t_ms, diagnose::Finding f) {
    push(FindingAt{t_ms, std::move(f)});
}

void HistoryWriter::replace_finding(std::int64_t t_ms, diagnose::Finding f) {
    push(FindingAt{t_ms, std::move(f), true});
}

void HistoryWriter::add_hang(std::int64_t t_ms, std::string rule, std::string text) {
    push(HangAt{t_ms, std::move(rule), std::move(text)});
}

void HistoryWriter::add_profile(RecordedProfile p) {
    push(std::move(p));
}

void HistoryWriter::add_oom_capture(RecordedOomCapture c) {
    push(std::move(c));
}

std::int64_t HistoryWriter::run_id() const {
    MutexLock lock(mutex_);
    return report_.run_id;
}

Status HistoryWriter::apply(const Write& w) {
    if (options_.shared) return options_.shared->use([&](History& h) { return apply_to(h, w); });
    if (!history_) {  // (again) open the database and begin the run
        Result<History> h = History::open(path_, HistoryAccess::record);
        if (!h.ok()) return h.error();
        history_.emplace(std::move(*h));
    }
    return apply_to(*history_, w);
}

Status HistoryWriter::apply_to(History& history, const Write& w) {
    if (!run_id_) {
        Result<std::int64_t> id =
            history.run_writes().begin_run(header_.name, header_.command, header_.cwd, header_.host, header_.start_ms);
        if (!id.ok()) return make_error("cannot begin the run: " + id.error().message);
        run_id_ = *id;
        MutexLock lock(mutex_);
        report_.run_id = *id;
    }
    const std::int64_t run = run_id_;
    return std::visit(
        Overloaded{[&](const Begin&) { return Status(Ok{}); },
                   [&](const Machine& m) {
                       return history.run_writes().set_machine(run, m.cpu_count, m.memory_total_bytes, m.gpus);
                   },
                   [&](const RunSample& s) { return history.run_writes().add_sample(run, s); },
                   [&](const std::vector<StepEvent>& s) { return history.run_writes().add_steps(run, s); },
                   [&](const FindingAt& f) {
                       return f.replace ? history.run_writes().replace_finding(run, f.t_ms, f.finding)
                                        : history.run_writes().add_finding(run, f.t_ms, f.finding);
                   },
                   [&](const HangAt& h) { return history.run_writes().add_hang(run, h.t_ms, h.rule, h.text); },
                   [&](const RecordedProfile& p) { return history.run_writes().add_profile(run, p); },
                   [&](const RecordedOomCapture& c) { return history.run_writes().add_oom_capture(run, c); },
                   [&](const End& e) {
                       return history.run_writes().finish_run(run, e.end_ms, e.exit_status, e.summary, e.energy);
                   }},
        w);
}

void HistoryWriter::loop() {
    UniqueLock lock(mutex_);
    for (;;) {
        changed_.wait(lock, [&]() BATON_REQUIRES(mutex_) { return stop_ || !queue_.empty(); });
        if (stop_) return;
        Queued q = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        const Status s = apply(q.write);
        const double waited = monotonic_seconds() - q.queued_at;
        lock.lock();
        busy_ = false;
        if (s.ok()) {
            report_.longest_wait_seconds = std::max(report_.longest_wait_seconds, waited);
            if (std::holds_alternative<RunSample>(q.write)) --queued_samples_;
            if (const auto* steps = std::get_if<std::vector<StepEvent>>(&q.write)) queued_steps_ -= steps->size();
            if (failures_) {
                failures_ = 0;
                const std::uint64_t lost = report_.samples_lost;
                lock.unlock();
                note("baton: recording to " + path_ + " again" +
                     (lost ? " (" + std::to_string(lost) + " sample(s) dropped meanwhile)" : std::string()));
                lock.lock();
            }
            changed_.notify_all();
            continue;
        }
        // Failed: back to the head of the queue, to be tried again after a pause.
        queue_.push_front(std::move(q));
        ++failures_;
        if (closing_) ++failures_since_closing_;
        if (report_.error.empty()) report_.error = s.error().message;  // the summary names the first
        changed_.notify_all();
        if (failures_ == 1) {  // said once per outage: when writes start failing, not at every try
            lock.unlock();
            char every[32];
            std::snprintf(every, sizeof every, "%g s", options_.retry_seconds);
            note("baton: cannot record this run in " + path_ + ": " + s.error().message +
                 "; the command goes on, and baton tries again every " + every);
            lock.lock();
        }
        if (!closing_)
            changed_.wait_for(lock, std::chrono::duration<double>(options_.retry_seconds),
                              [&]() BATON_REQUIRES(mutex_) { return stop_ || closing_; });
    }
}

RecordingReport HistoryWriter::finish(std::int64_t end_ms, int exit_status,
                                      const std::function<std::string(const RecordingReport&)>& summary,
                                      double drain_seconds, const std::string& energy) {
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(drain_seconds));
    UniqueLock lock(mutex_);
    closing_ = true;
    failures_since_closing_ = 0;
    changed_.notify_all();
    // A failing database gets two more tries, a healthy one the time to write its backlog.
    auto settled = [&]() BATON_REQUIRES(mutex_) { return (queue_.empty() && !busy_) || failures_since_closing_ >= 2; };
    changed_.wait_until(lock, deadline, settled);
    auto give_up = [&]() BATON_REQUIRES(mutex_) {  // what is still queued never reaches the database
        stop_ = true;
        changed_.notify_all();
        changed_.wait(lock, [&]() BATON_REQUIRES(mutex_) { return !busy_; });
        for (const Queued& q : queue_) count_lost(q.write);
        queue_.clear();
    };
    if (!report_.run_id || !(queue_.empty() && !busy_)) {
        give_up();
        RecordingReport r = report_;
        lock.unlock();
        changed_.notify_all();
        thread_.join();
        return r;
    }
    RecordingReport assumed = report_;
    assumed.end_recorded = true;  // what the stored summary says, written only if it is so
    lock.unlock();
    std::string text = summary(assumed);
    lock.lock();
    failures_since_closing_ = 0;
    queue_.push_back({End{end_ms, exit_status, std::move(text), energy}, monotonic_seconds()});
    changed_.notify_all();
    const auto end_deadline = std::max(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(12));
    changed_.wait_until(lock, end_deadline, settled);
    report_.end_recorded = queue_.empty() && !busy_;
    give_up();
    RecordingReport r = report_;
    lock.unlock();
    thread_.join();
    return r;
}

}  // namespace baton::store
