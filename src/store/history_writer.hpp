// `baton run`'s recorder: the history's writes on a thread of their own, behind a bounded queue.
//
// Why a thread: the loop that samples the machine also passes the command's stderr on; a write
// that waits for the database (another process holding a write lock, `baton runs prune` of a big
// run, a slow disk) must never hold the training command's output back. Why a bounded queue: a
// database that cannot be written (a full disk) must not grow baton's memory; the oldest samples
// (and step events) are dropped first, counted, and the summary says so. Every write is checked:
// a failure is said once on stderr (what, where, why; again only after the writes had recovered),
// retried at a bounded rate (the record resumes when space comes back), and what never reached the
// database is in the report.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "core/thread_safety.hpp"
#include "diagnose/finding.hpp"
#include "store/history.hpp"
#include "store/shared_history.hpp"

namespace baton::store {

// The run as `History::begin_run` records it.
struct RunHeader {
    std::string name, command, cwd, host;
    std::int64_t start_ms = 0;
};

// What became of a run's record: the summary says which part of it is missing.
struct RecordingReport {
    std::string db_path;
    std::int64_t run_id = 0;  // 0: never recorded (the database could not be opened or the run begun)
    std::uint64_t samples_lost = 0, steps_lost = 0, findings_lost = 0;
    bool machine_lost = false;        // the run's CPUs, memory and GPUs
    bool end_recorded = false;        // the end: exit status and summary (the run stays "running", then "interrupted")
    std::string error;                // the first failure ("" when there was none)
    double longest_wait_seconds = 0;  // the longest a write waited to reach the database
    bool complete() const {
        return run_id && end_recorded && !samples_lost && !steps_lost && !findings_lost && !machine_lost;
    }
};

class HistoryWriter {
  public:
    struct Options {
        std::size_t max_queued_samples = 4096;  // 34 min at 0.5 s: about 1 MB with 4 GPUs
        std::size_t max_queued_steps = 200000;  // about 20 MB
        double retry_seconds = 1;               // between tries while the database fails
        // Where the one-line notes go (a failure, the recovery); stderr when empty.
        std::function<void(const std::string&)> say;
        // Writes through this connection (one for many runs of this process: the queue's jobs)
        // instead of one of the writer's own; its path replaces the writer's.
        std::shared_ptr<SharedHistory> shared;
    };

    HistoryWriter(std::string path, RunHeader header, Options options);
    HistoryWriter(std::string path, RunHeader header) : HistoryWriter(std::move(path), std::move(header), Options{}) {}
    ~HistoryWriter();
    HistoryWriter(const HistoryWriter&) = delete;
    HistoryWriter& operator=(const HistoryWriter&) = delete;

    // Each queues one write and returns at once.
    void set_machine(unsigned cpu_count, std::uint64_t memory_total_bytes, std::vector<RunGpu> gpus);
    void add_sample(RunSample s);
    void add_steps(std::vector<StepEvent> steps);
    void add_finding(std::int64_t t_ms, diagnose::Finding f);
    // The finding's latest record of its rule and subject, said better (cuda_oom with its capture).
    void replace_finding(std::int64_t t_ms, diagnose::Finding f);
    void add_hang(std::int64_t t_ms, std::string rule, std::string text);
    void add_profile(RecordedProfile p);
    void add_oom_capture(RecordedOomCapture c);

    // The run's id once the database has begun it, else 0 (the queue names it in `baton show`
    // while the job runs). Any thread.
    std::int64_t run_id() const;

    // The end of the run: waits for the queue to reach the database (up to `drain_seconds`, or
    // two more failed tries when it is failing), records the end with the text `summary` makes
    // from the report (which may say what is missing), stops the thread and says what became of
    // the record. Call once.
    // `energy`: the run's (store/run_energy.hpp's JSON, "" when none).
    RecordingReport finish(std::int64_t end_ms, int exit_status,
                           const std::function<std::string(const RecordingReport&)>& summary, double drain_seconds = 30,
                           const std::string& energy = "");

  private:
    struct Machine {
        unsigned cpu_count;
        std::uint64_t memory_total_bytes;
        std::vector<RunGpu> gpus;
    };
    struct FindingAt {
        std::int64_t t_ms;
        diagnose::Finding finding;
        bool replace = false;  // History::replace_finding
    };
    struct HangAt {
        std::int64_t t_ms;
        std::string rule, text;
    };
    struct End {
        std::int64_t end_ms;
        int exit_status;
        std::string summary;
        std::string energy;
    };
    struct Begin {};  // open the database and begin the run (the first write; any write does it if needed)
    using Write = std::variant<Begin, Machine, RunSample, std::vector<StepEvent>, FindingAt, HangAt, RecordedProfile,
                               RecordedOomCapture, End>;
    struct Queued {
        Write write;
        double queued_at;  // monotonic seconds
    };

    void push(Write w);
    void loop();
    Status apply(const Write& w);
    Status apply_to(History& h, const Write& w);
    void note(const std::string& line);
    void count_lost(const Write& w) BATON_REQUIRES(mutex_);

    const std::string path_;
    const RunHeader header_;
    const Options options_;
    // The writer thread's alone:
    std::optional<History> history_;  // its own connection (none with options_.shared)
    std::int64_t run_id_ = 0;         // begun (report_.run_id says it to the others)

    // The caller's thread pushes and finishes, the writer thread takes and reports.
    mutable Mutex mutex_;
    std::condition_variable_any changed_;
    std::deque<Queued> queue_ BATON_GUARDED_BY(mutex_);
    std::size_t queued_samples_ BATON_GUARDED_BY(mutex_) = 0;
    std::size_t queued_steps_ BATON_GUARDED_BY(mutex_) = 0;
    bool busy_ BATON_GUARDED_BY(mutex_) = false;     // a write is out of the queue, on its way to the database
    bool stop_ BATON_GUARDED_BY(mutex_) = false;     // the thread ends
    bool closing_ BATON_GUARDED_BY(mutex_) = false;  // finish() waits: no pause between tries
    int failures_ BATON_GUARDED_BY(mutex_) = 0;      // consecutive failed tries
    int failures_since_closing_ BATON_GUARDED_BY(mutex_) = 0;
    RecordingReport report_ BATON_GUARDED_BY(mutex_);
    std::thread thread_;
};

}  // namespace baton::store
