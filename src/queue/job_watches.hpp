// The running jobs' watches (run/job_watch.hpp), one per job, shared by three threads: the queue
// thread adds a job's watch when its supervisor starts, takes it back when the job ends, and asks
// which runs the history now names; the agent's sampling thread feeds every watch after each
// sample (the job's stderr as it grows, the Python hook's events, the machine's window); this
// class's hang thread takes each job's turn of its hang verdict after each sample. The lock is this
// class's alone, so no thread can touch a watch without it, and it is never held over slow work:
// a turn (a look at the ranks' stacks, up to 2 s; the Flight Recorder's reader, up to 10 s) runs
// without it, so a hung job can hold neither the sampler nor the queue.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/thread_safety.hpp"
#include "core/thresholds.hpp"
#include "diagnose/job_usage.hpp"
#include "diagnose/series.hpp"
#include "queue/job_shim.hpp"
#include "run/events_socket.hpp"
#include "run/job_hangs.hpp"
#include "run/job_watch.hpp"
#include "store/history.hpp"
#include "store/shared_history.hpp"

namespace baton::queue {

// One running job's watch and what feeds it.
struct WatchedJob {
    std::unique_ptr<run::JobWatch> watch;
    std::optional<run::EventsSocket> events;  // the Python hook's socket in the job's directory
    std::string stderr_path;
    std::uint64_t stderr_read = 0;  // how much of it the watch has read
    double started = 0;             // monotonic seconds
    bool run_linked = false;        // the store names its run
    std::string stacks_dir;         // the job's stack handler writes there ("": it has none)
    std::string memory_dir;         // the hook's out-of-memory captures ("": none asked)
    // Its hang verdict, when it has the handler: the hang thread's alone (shared: a job taken back
    // mid-turn leaves it to that turn), and the verdict that holds, for the sampler's findings.
    std::shared_ptr<run::JobHangs> hangs;
    std::optional<diagnose::Finding> hang_finding;
    pid_t root = 0;  // its supervisor: the job's processes are below it
    // The job as baton usage counts it ("queue:ID", its owner, CPUs and memory), and its GPUs by
    // UUID (the snapshot gives their indices): JobWatches::usage_jobs fills in its processes.
    diagnose::OtherJob usage;
    std::vector<std::string> gpu_uuids;
};

// The watch of job `j`, whose supervisor is `pid`, whose directory is `dir` and whose environment
// is `env` (its CUDA_VISIBLE_DEVICES goes in the summary): recorded in `history` (the agent's one
// connection for all its jobs' runs; none: not recorded).
// `watched` already holds the hook's socket when there is one.
// With a stacks directory, the job's hang verdict too (`hang`; reported, never stopped on).
void start_watch(WatchedJob& watched, const store::JobRecord& j, pid_t pid, const std::string& dir,
                 const std::vector<std::string>& env, const Thresholds& thresholds,
                 const std::shared_ptr<store::SharedHistory>& history, const hang::HangWatchOptions& hang = {});

// Where the queue reads a job's Flight Recorder dumps: only the files it placed itself (in
// `fr_dir`); a job whose environment names its own keeps them, and its verdict is from the stacks
// (the agent, often root, does not read where its users point it).
hang::FlightRecorderPaths queue_flight_recorder_paths(const std::string& fr_dir, const std::vector<std::string>& env);

// Reads the job's stderr from where the watch left it: at most `max_chunks` reads of 64 KiB (0:
// to its end), so that one job writing fast cannot hold the sampler.
void read_stderr(WatchedJob& w, int max_chunks);

// The job ended with status `st`: what is left of its stderr and the hook's events, its cgroup's
// OOM kills (its memory.max being `memory_limit`, 0: none), then its end as the watch records it.
run::RunStats finish_watch(WatchedJob& w, const ShimStatus& st, std::uint64_t memory_limit);

class JobWatches {
  public:
    JobWatches() = default;
    ~JobWatches() { stop_hang_thread(); }
    JobWatches(const JobWatches&) = delete;
    JobWatches& operator=(const JobWatches&) = delete;

    // The hang thread: each job's turn after every feed() (stop: after the turn under way, which
    // may read a Flight Recorder dump for up to 10 s).
    void start_hang_thread();
    void stop_hang_thread();
    // One turn of every job's hang verdict, the lock let go around each (the hang thread's loop;
    // tests call it directly).
    void hang_turns();

    void add(std::int64_t id, std::unique_ptr<WatchedJob> w);
    // The job's watch, no longer fed; null when it had none.
    std::unique_ptr<WatchedJob> take(std::int64_t id);
    // The sampling thread, after each sample: every watch reads its job's new output and events,
    // then the window; the hang thread is woken for its turns. The hang verdicts that hold (as of
    // the last turns), as findings whose subject is "job ID" (the agent's /metrics and alerts).
    std::vector<diagnose::Finding> feed(const diagnose::Window& window);
    // The sampling thread, after feed(): every running job for the agent's usage tracker, with its
    // processes (the tree under its supervisor) and its GPUs as `s` has them.
    std::vector<diagnose::OtherJob> usage_jobs(const Snapshot& s);
    // The jobs whose run the history got since the last call, as (job, run) pairs.
    std::vector<std::pair<std::int64_t, std::int64_t>> newly_recorded();
    std::size_t size();

  private:
    Mutex mutex_;
    std::map<std::int64_t, std::unique_ptr<WatchedJob>> watched_ BATON_GUARDED_BY(mutex_);
    std::condition_variable_any wake_hangs_;
    bool hangs_due_ BATON_GUARDED_BY(mutex_) = false;
    bool stopping_ BATON_GUARDED_BY(mutex_) = false;
    std::thread hang_thread_;  // started and joined by the owner's thread
};

}  // namespace baton::queue
