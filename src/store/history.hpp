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

    Result<std::int64_t> begin_run(const std::string& name, const std::string& command, const std::string& cwd,
                                   const std::string& host, std::int64_t start_ms);
    // The machine the run ran on (called once, at the first sample).
    Status set_machine(std::int64_t run, unsigned cpu_count, std::uint64_t memory_total_bytes,
                       const std::vector<RunGpu>& gpus);
    Status add_sample(std::int64_t run, const RunSample& s);
    Status add_step(std::int64_t run, const StepEvent& e);
    // Several steps in one transaction (what `baton run` drains from the socket each turn).
    Status add_steps(std::int64_t run, const std::vector<StepEvent>& steps);
    Status add_finding(std::int64_t run, std::int64_t t_ms, const diagnose::Finding& f);
    // Replaces the latest record of f's rule and subject (its time stays that of the first sighting),
    // or records f when there is none.
    Status replace_finding(std::int64_t run, std::int64_t t_ms, const diagnose::Finding& f);
    Status add_hang(std::int64_t run, std::int64_t t_ms, const std::string& rule, const std::string& text);
    Status add_profile(std::int64_t run, const RecordedProfile& p);
    Status add_oom_capture(std::int64_t run, const RecordedOomCapture& c);
    // `energy`: store/run_energy.hpp's JSON ("" when none was measured).
    Status finish_run(std::int64_t run, std::int64_t end_ms, int exit_status, const std::string& summary,
                      const std::string& energy = "");

    // A bench, recorded whole once it is done (history_bench.cpp): a finished run of kind "bench"
    // with exit status 0, its report text as the summary, and its links, in one transaction.
    Result<std::int64_t> record_bench(const std::string& name, const std::string& command, const std::string& cwd,
                                      const std::string& host, std::int64_t start_ms, std::int64_t end_ms,
                                      const std::string& report, const std::vector<BenchLinkRecord>& links);
    // `baton tune`'s result (history_tunings.cpp). The latest tuning of exactly `command` in `cwd`,
    // else of the same `script` in `cwd`; none when neither was tuned.
    Result<std::int64_t> add_tuning(const TuningRecord& t);
    Result<std::optional<TuningRecord>> latest_tuning(const std::string& command, const std::string& script,
                                                      const std::string& cwd);
    // A bench run's links, in the order measured (empty for other runs).
    Result<std::vector<BenchLinkRecord>> bench_links(std::int64_t run);

    Result<std::vector<RunRecord>> runs();
    // What a baton process with this pid and start time recorded: "run 12 (resnet)" or
    // "queued job 7 (resnet)"; "" when nothing (baton clean names a leftover's owner with it).
    Result<std::string> owner_label(std::int64_t pid, std::uint64_t start_ticks);
    // One run's record; an error "no run N in the history" when there is none.
    Result<RunRecord> run(std::int64_t id);
    // One run with its samples, findings and steps.
    Result<StoredRun> load_run(std::int64_t id);
    Result<std::vector<RunSample>> samples(std::int64_t run);
    Result<std::vector<RecordedFinding>> findings(std::int64_t run);
    Result<std::vector<RecordedHang>> hangs(std::int64_t run);
    // The run's profiler windows, oldest first, traces included (not part of load_run: they are large).
    Result<std::vector<RecordedProfile>> profiles(std::int64_t run);
    // The run's out-of-memory captures, oldest first.
    Result<std::vector<RecordedOomCapture>> oom_captures(std::int64_t run);
    Result<std::vector<StepEvent>> steps(std::int64_t run);
    // The runs prune(before_ms) would delete: finished or interrupted, ended (or, when
    // interrupted, started) before `before_ms`. What `baton runs prune --dry-run` lists.
    Result<std::vector<RunRecord>> prunable(std::int64_t before_ms);
    // Deletes those runs (their samples, findings and steps go with them); returns how many.
    Result<int> prune(std::int64_t before_ms);
    // Gives the space of deleted rows back to the file system (VACUUM, then a WAL checkpoint
    // that truncates the log); returns the bytes the database shrank by. Fails, changing
    // nothing, while another process holds a transaction open (a `baton run` writing).
    Result<std::int64_t> vacuum();
    // baton serve's machine history (history_metrics.cpp). Rows replace those of the same metric,
    // subject and minute (an agent restarted within a minute writes its minute again).
    Status add_metric_minutes(const std::vector<MetricMinute>& rows);
    // One series' minutes in [from_minute, to_minute], in time order.
    Result<std::vector<MetricMinute>> metric_minutes(const std::string& metric, const std::string& subject,
                                                     std::int64_t from_minute, std::int64_t to_minute);
    // Every (metric, subject) that has minutes, with no values filled in.
    Result<std::vector<MetricMinute>> metric_series();
    // Deletes the minutes before `minute` (retention); returns how many.
    Result<std::int64_t> prune_metric_minutes(std::int64_t minute);

    // baton usage's records (history_usage.cpp), in one transaction: each replaces the one of the
    // same label and start. Those that reach `since_ms` or later, by start; those that ended before
    // `before_ms` deleted (retention), with how many.
    Status put_usage(const std::vector<UsageRecord>& rows);
    Result<std::vector<UsageRecord>> usage(std::int64_t since_ms);
    Result<std::int64_t> prune_usage(std::int64_t before_ms);

    // The job queue (history_jobs.cpp). A new job (state queued or held); returns its id.
    Result<std::int64_t> add_job(const JobRecord& j);
    // Many new jobs in one transaction (all or none), their ids in order. With `as_array`, they are
    // one array: each one's array_id becomes the first one's id (their array_index is kept).
    Result<std::vector<std::int64_t>> add_jobs(const std::vector<JobRecord>& jobs, bool as_array);
    // A job that has not started (queued or held) takes the command, name, request, priority and
    // dependencies of `j` (baton edit); false when it had started or ended meanwhile.
    Result<bool> edit_job(const JobRecord& j);
    // The queue's groups, by name; adds one or changes its limit; removes one (false: none of that name).
    Result<std::vector<JobGroup>> job_groups();
    Status set_job_group(const JobGroup& g);
    Result<bool> remove_job_group(const std::string& name);
    // Every job, or the open ones only (queued, held, starting, running), by id.
    Result<std::vector<JobRecord>> jobs(bool open_only = false);
    // One job; an error "no job N in the queue" when there is none.
    Result<JobRecord> job(std::int64_t id);
    // queued -> starting with its GPUs and CPUs, for every start of one plan in one transaction;
    // returns the jobs that moved (one cancelled or held in between does not).
    Result<std::vector<std::int64_t>> start_jobs(const std::vector<JobStartRecord>& starts, std::int64_t now_ms);
    // starting -> running, with the process that supervises it; false when it was not starting.
    Result<bool> job_running(std::int64_t id, std::uint32_t pid, std::uint64_t pid_start_ticks,
                             const std::string& boot_id, std::optional<std::int64_t> run_id);
    // Moves a job from one of `from` to `to` (hold, release, cancel); ending it (done, failed,
    // cancelled, lost) sets end_ms, exit_status and note (its GPUs and CPUs stay, as what it ran on:
    // only starting and running jobs hold them); putting
    // it back in the queue (a start that did not happen) gives them back and forgets the start.
    // False when the job was in none of `from`.
    Result<bool> change_job_state(std::int64_t id, const std::vector<JobState>& from, JobState to, std::int64_t now_ms,
                                  std::optional<int> exit_status = std::nullopt, const std::string& note = "");
    // A running job paused since `since_ms` (baton pause), or running on (none); false when it is not
    // running. Any other change of its state forgets the pause.
    Result<bool> set_job_paused(std::int64_t id, std::optional<std::int64_t> since_ms);
    // The job's record in the run history (known once its watch recorded it).
    Status set_job_run(std::int64_t id, std::int64_t run_id);
    // An ended job (failed, lost, cancelled, done) queued again as its next attempt; false when
    // it had not ended.
    Result<bool> requeue_job(std::int64_t id, const std::string& note);
    // Forgets the ended jobs (done only, with `done_only`) of `owner` (everyone's when none), but
    // those in `keep` and the newest job of all (so that no id is ever given twice), in one
    // transaction; returns their ids. Their runs stay in the history.
    Result<std::vector<std::int64_t>> remove_ended_jobs(std::optional<std::uint32_t> owner, bool done_only,
                                                        const std::set<std::int64_t>& keep);

    // PRAGMA integrity_check's answer ("ok" when intact).
    std::string integrity();

    // Packing of one sample (exposed for tests).
    static std::string pack(const RunSample& s);
    static bool unpack(const std::string& blob, RunSample& s);

    const std::string& path() const { return path_; }

  private:
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
