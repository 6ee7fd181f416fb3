// The run history: SQLite in WAL mode (design.md), one file, written by `baton run` while the
// command runs and read by `baton runs`. Crash-safe: every tick is its own transaction, and a run
// whose baton died (kill -9) is found "running" with a dead owner and shows as "interrupted" (and
// is marked so the next time a writer opens the database). The owner is its pid, the pid's start
// time and the boot: a pid reused by another process, or a run recorded before a reboot, is dead.
//
// Samples are stored one row per tick, with the tick's figures packed in a small binary blob
// (docs/architecture.md, "Run history", has the layout and why: about 7 MB for a one-hour run at
// 0.5 s with 4 GPUs, against about 15 MB for one row per tick per subject).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "diagnose/finding.hpp"
#include "sample/snapshot.hpp"
#include "store/job_state.hpp"
#include "store/run_owner.hpp"
#include "store/run_state.hpp"

struct sqlite3;

namespace baton::store {

// A GPU the run's machine had, as seen at its first sample.
struct RunGpu {
    unsigned index = 0;
    std::string uuid, name;
    std::uint64_t memory_total_bytes = 0;
};

struct RunRecord {
    std::int64_t id = 0;
    std::string name, command, cwd, host;
    std::optional<unsigned> cpu_count;                // the machine, from the first sample
    std::optional<std::uint64_t> memory_total_bytes;  // (absent in runs recorded before schema 2)
    std::vector<RunGpu> gpus;
    std::int64_t start_ms = 0;
    std::optional<std::int64_t> end_ms;
    std::optional<int> exit_status;
    RunState state = RunState::running;
    std::int64_t samples = 0;
    std::int64_t findings = 0;
    std::string summary;  // the end-of-run summary text, once finished (a bench: its report)
    RunKind kind = RunKind::run;
    RunOwner owner;      // the baton process that recorded it (`baton stacks RUN` asks its processes)
    std::string energy;  // store/run_energy.hpp's JSON; empty when none was measured (or before schema 15)
};

// What `baton tune` found for a command (history_tunings.cpp).
struct TuningRecord {
    std::int64_t id = 0, t_ms = 0;
    std::string command;  // the argv joined by spaces, as runs keep it
    std::string script;   // the command up to its script (tuning_script_key)
    std::string cwd;
    std::string settings = "{}";                    // the winner's (tune/settings.hpp's JSON); "{}" when none won
    std::string label;                              // "num_workers=4", or "your settings"
    std::optional<double> gain;                     // the winner's over the script's own settings (0.74: +74 %)
    std::string measure;                            // "steps/s" or "samples/s"
    std::int64_t baseline_run = 0, winner_run = 0;  // a trial of each in the runs (0: none recorded)
    std::string report;                             // the whole result (baton tune --json)
};

// The words of a command up to its script: through the first word ending in ".py", or through the
// module after "-m"; the whole command when it has neither. `baton run --tuned` finds a tuning of the
// same script when the arguments after it differ.
std::string tuning_script_key(const std::vector<std::string>& argv);

// One link a bench measured (measure/bench_report.hpp's LinkResult, as stored).
struct BenchLinkRecord {
    std::string bench, link;  // "h2d", "h2d gpu0 pinned"
    double measured = 0;      // in `unit`
    std::optional<double> peak, need;
    std::string peak_source, verdict, detail;
    std::string unit = "B/s";  // "B/s", or scaling's "samples/s" and "steps/s"
};

struct RecordedFinding {
    std::int64_t t_ms = 0;
    std::string rule, severity, subject, summary, recommendation;
    std::vector<diagnose::Evidence> evidence;  // empty for runs recorded before schema 3
};

// A hang verdict as it was said during a run (run/job_hangs.hpp): its rule and its whole text (the
// sentence, then the ranks' stacks grouped).
struct RecordedHang {
    std::int64_t t_ms = 0;
    std::string rule, text;
};

// A profiler window of `baton run --profile` (docs/profile.md): the trace the hook wrote, gzipped
// Chrome-trace JSON as it was (baton profile reads it again: the analysis is not stored, so a newer
// baton judges an old trace by its own rules).
struct RecordedProfile {
    std::int64_t t_ms = 0;
    int rank = 0;
    std::int64_t steps = 0;
    std::string trace_gz;
};

// The hook's capture at a CUDA out-of-memory error (docs/memory.md, gpu_memory/allocator_capture.hpp):
// the JSON as the hook wrote it, judged again when read.
struct RecordedOomCapture {
    std::int64_t t_ms = 0;
    int rank = 0;
    std::uint32_t pid = 0;
    std::string json;
};

// One tick of a run, in base units (bytes, bytes per second, percent, watts, degrees Celsius, MHz), with
// what was not measured left empty. The history packs it into a small blob of GiB and MB/s floats with -1
// for unknown (the on-disk format since schema 1, kept so old runs read back); `pack` and `unpack` are the
// only places that know those units.
struct RunSample {
    std::int64_t t_ms = 0;
    double cpu_percent = 0, iowait_percent = 0;
    double memory_used_bytes = 0;
    double swap_bytes_per_second = 0;  // in and out
    double job_cpu_percent = 0;
    double job_rss_bytes = 0;
    // All disks summed (the devices that count as storage); empty in runs recorded before blob version 2.
    std::optional<double> disk_read_bytes_per_second, disk_write_bytes_per_second;
    struct Gpu {
        std::uint8_t index = 0;
        double utilization_percent = 0;
        double memory_used_bytes = 0;
        // Empty: not reported by this GPU, or (all but SM activity) recorded before blob version 3.
        std::optional<double> sm_activity_percent, power_watts, temperature_celsius, sm_clock_mhz;
        // The clock-event (throttle) reasons active, one bit each in the order of
        // decode_throttle_reasons() (bit 0 gpu_idle, 2 sw_power_cap, 3 hw_slowdown, 5 sw_thermal,
        // 6 hw_thermal, 7 hw_power_brake); empty: not reported.
        std::optional<std::uint16_t> throttle_reasons;
    };
    std::vector<Gpu> gpus;
};

// One training step reported by the Python hook (issue 6 writes these; the schema is here so a
// run's record is complete in one place).
struct StepEvent {
    std::int64_t t_ms = 0;  // when the step ended
    std::uint32_t pid = 0;  // the training process that sent it
    int rank = 0;           // the process's rank in a distributed job, 0 otherwise
    std::int64_t step = 0;
    double step_ms = 0;  // the whole step
    double wait_ms = 0;  // of which waiting for the next batch
    std::optional<std::int64_t> samples;
    std::string data;  // further figures as a JSON object (memory stats, the GradScaler's scale), or empty
};

// A run with everything recorded about it: what `baton report` and `baton compare` read.
struct StoredRun {
    RunRecord run;
    std::vector<RunSample> samples;
    std::vector<RecordedFinding> findings;
    std::vector<StepEvent> steps;
    std::vector<RecordedHang> hangs;  // oldest first
};

// One minute of one machine metric, as baton serve keeps it (avg, min and max of the samples).
struct MetricMinute {
    std::string metric, subject;  // e.g. "gpu.utilization_percent", "gpu:0"
    std::int64_t minute = 0;      // Unix time / 60
    double avg = 0, min = 0, max = 0;
};

// What one job used of this machine in one stretch of time (baton usage; the agent writes one per
// job and hour, diagnose/job_usage.hpp integrates the figures). Seconds are integrals over the
// samples: GPU-seconds allocated (else held), busy (utilisation), SM-busy; CPU-seconds likewise.
struct UsageRecord {
    std::string label;                  // "queue:12", "user:alice", "slurm:1234", "service:jupyter.service"
    std::int64_t start_ms = 0;          // the stretch: [start_ms, end_ms]
    std::int64_t end_ms = 0;            // the last sample that saw the job in it
    std::string kind, job, name, user;  // kind "queue", "user", ...; job: its id in that kind
    bool ended = false;                 // the job had left when this was written
    double seconds = 0;                 // seen
    unsigned gpus = 0;                  // the most GPUs it had (allocated, else used) at once
    double gpu_seconds = 0, gpu_busy_seconds = 0, sm_seconds = 0, sm_busy_seconds = 0;
    std::uint64_t gpu_memory_peak_bytes = 0;   // on its fullest GPU
    std::uint64_t gpu_memory_total_bytes = 0;  // that GPU's memory
    std::optional<unsigned> cpus;              // allocated (queue, Slurm), else absent
    double cpu_seconds_allocated = 0, cpu_seconds = 0;
    std::uint64_t memory_peak_bytes = 0;
    std::optional<std::uint64_t> memory_allocated_bytes;
    bool operator==(const UsageRecord&) const = default;
};

// A job of baton submit's queue, as stored (history_jobs.cpp). The queue gives the states their
// meaning (queue/scheduler.hpp); the store keeps each change one transaction and refuses a change
// from a state the job is no longer in.
struct JobRecord {
    std::int64_t id = 0;
    std::uint32_t owner_uid = 0;
    std::string name;
    std::vector<std::string> argv;
    std::string cwd;
    std::vector<std::pair<std::string, std::string>> env;  // the submitter's environment
    std::string request = "{}";                            // the queue's resources and options (JSON), opaque here
    int priority = 0;
    std::vector<std::int64_t> after;
    bool after_ok = false;
    JobState state = JobState::queued;  // kept as its name (store/job_state.hpp)
    int attempt = 0;                    // 0, then one more at each retry
    std::int64_t submit_ms = 0;
    std::optional<std::int64_t> start_ms, end_ms;
    std::optional<int> exit_status;  // as a shell says it: 128 + N after signal N
    std::vector<std::string> gpus;   // while starting or running: its GPUs (UUIDs) and CPUs
    std::vector<unsigned> cpus;
    std::optional<std::uint32_t> pid;  // its supervising process, with the start time and boot that make it unique
    std::optional<std::uint64_t> pid_start_ticks;
    std::string boot_id;
    std::optional<std::int64_t> run_id;     // its record in the run history
    std::string note;                       // why it ended as it did, or was requeued
    std::optional<std::int64_t> paused_ms;  // a running job's processes stopped (baton pause) since then
    // An element of an array (baton submit --array): the array's id (its first element's) and the
    // element's index (BATON_ARRAY_INDEX).
    std::optional<std::int64_t> array_id, array_index;
};

// A group of the queue (baton group): at most `parallel` of its jobs hold resources at once.
struct JobGroup {
    std::string name;
    unsigned parallel = 1;
    std::uint32_t owner_uid = 0;  // who added it: they and root may change or remove it
};

// One start the scheduler decided: the job, its GPUs and CPUs.
struct JobStartRecord {
    std::int64_t job = 0;
    std::vector<std::string> gpus;
    std::vector<unsigned> cpus;
};

// A run id as typed on the command line ("12"); anything else is a not_found error naming it,
// as for an id with no run: "no run 'abc' (baton runs lists the runs)".
Result<std::int64_t> parse_run_id(const std::string& text);

// How a command opens the history.
enum class HistoryAccess {
    // `baton run`: creates the database (0600) and its directory (0700) when missing, migrates
    // the schema, marks runs of dead owners interrupted.
    record,
    // `baton runs prune`: the same on an existing database only.
    manage,
    // The readers (runs, report, compare): an existing database, opened read-only, so a history
    // in a read-only directory or someone else's can be read (immutable when SQLite cannot create
    // its WAL index beside it). A mistyped --db is an error, not a new empty database.
    read,
};

class RunWrites;
class RunReads;
class BenchTable;
class TuningTable;
class MinuteTable;
class UsageTable;
class QueueJobsTable;

class History {
  public:
    // Opens the history at `path` as `access` says. Two baton runs opening a new database at once
    // both get it migrated exactly once (the migration runs in one BEGIN IMMEDIATE transaction).
    static Result<History> open(const std::string& path, HistoryAccess access = HistoryAccess::record);
    History(History&& o) noexcept;
    History& operator=(History&&) = delete;
    ~History();

    // The default path: $XDG_STATE_HOME/baton/baton.db, else ~/.local/state/baton/baton.db.
    static std::string default_path();
    // baton's other state goes beside the history database: `name` in the directory of `db_path`
    // (the agent's log, the queue's job directories, the Slurm jobs handed over, launch's logs,
    // scaling's work directories). A path without a directory: `name` itself.
    static std::string beside(const std::string& db_path, const std::string& name);

    // Gives the space of deleted rows back to the file system (VACUUM, then a WAL checkpoint
    // that truncates the log); returns the bytes the database shrank by. Fails, changing
    // nothing, while another process holds a transaction open (a `baton run` writing).
    Result<std::int64_t> vacuum();

    // The tables, each a class of its own over this connection (history_runs.hpp, history_bench.hpp,
    // history_tunings.hpp, history_metrics.hpp, history_usage.hpp, history_jobs.hpp).
    RunWrites run_writes();       // a run as it is recorded: begin, samples, steps, findings, end
    RunReads run_reads();         // the recorded runs, read back, and their pruning
    BenchTable bench_table();     // `baton bench`'s records and their links
    TuningTable tuning_table();   // `baton tune`'s results
    MinuteTable minute_table();   // baton serve's metric minutes
    UsageTable usage_table();     // `baton usage`'s records
    QueueJobsTable queue_jobs();  // the job queue's jobs and groups

    // PRAGMA integrity_check's answer ("ok" when intact).
    std::string integrity();

    const std::string& path() const { return path_; }

  private:
    friend class HistoryTable;  // the tables' classes share the connection and its helpers
    History(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
    Status exec(const char* sql);
    // ROLLBACK, best effort: the failure that led to it is the one the caller reports (SQLite has
    // already rolled back when that failure was a full disk or an I/O error).
    void rollback();
    Status migrate();
    void mark_interrupted();
    // The error for a read that stopped on anything but the end of its rows: a damaged file is
    // never read as if its table had ended.
    Error read_error(const std::string& what) const;
    sqlite3* db_ = nullptr;
    std::string path_;
    int last_rc_ = 0;  // the result code of exec()'s last failure
};

}  // namespace baton::store
