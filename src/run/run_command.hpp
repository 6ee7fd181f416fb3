// `baton run -- CMD`: start CMD, sample the machine and CMD's process tree while it runs, print
// new findings as they appear, forward stop signals, and summarise the run at the end.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/thresholds.hpp"
#include "diagnose/finding.hpp"
#include "hang/hang_watch.hpp"
#include "run/profile_window.hpp"
#include "sample/sampler.hpp"
#include "store/history_writer.hpp"
#include "store/hook_event.hpp"
#include "store/run_energy.hpp"

namespace baton::run {

// `baton tune`'s trial: the command run as it is with settings in its environment and its output in
// a log, ended at a step once `enough` says so (the hook ends the script there: python/baton/_tune.py)
// or at its deadline.
struct TrialControl {
    std::vector<std::pair<std::string, std::string>> environment;  // the command's alone
    int output_fd = -1;                                            // its stdout and stderr
    std::string stop_file;         // made once `enough` is true (the command's BATON_TRIAL_STOP)
    std::function<bool()> enough;  // asked each turn
    double deadline_seconds = 0;   // > 0: ended (SIGTERM to its group, the grace, SIGKILL) after this long
    std::function<void(const store::HookEvent&)> on_event;  // every event the hook sent
};

// `baton run --tune-live` (tune/live_tuner.hpp decides): the file the hook reads at each epoch's start
// (BATON_LIVE_TUNE; the callbacks write it), and what to do with each event of the hook and after each
// sample (the findings it returns join the run's: the changes it made).
struct LiveControl {
    std::string control_file;
    std::function<void(const store::HookEvent&)> on_event;
    std::function<std::vector<diagnose::Finding>(const Snapshot&)> on_sample;
};

struct RunOptions {
    std::vector<std::string> argv;
    std::string name;  // defaults to the command line (program base name and arguments)
    double interval_seconds = 0.5;
    double grace_seconds = 10;
    bool quiet = false;  // keep findings for the summary
    SamplerOptions sampler;
    Thresholds thresholds;
    // Where to record the run (store/history.hpp); empty: not recorded.
    std::string db_path;
    store::HistoryWriter::Options recording;  // its queue's bounds, retry pause
    // The hang verdict over the command's Python ranks (docs/launch.md, "When a job hangs").
    hang::HangWatchOptions hang;
    bool stop_on_hang = false;  // on_hang = "stop": the command is stopped, baton run exits 124
    ProfileRequest profile;     // --profile: a profiler window inside the hook (docs/profile.md)
    // --memory-history: allocation events the hook has PyTorch keep for an OOM's capture (0: none;
    // the capture itself is always asked for, docs/memory.md).
    std::int64_t memory_history = 0;
    std::optional<TrialControl> trial;
    std::optional<LiveControl> live;
};

// What the summary reports, kept as running aggregates so memory stays flat over long runs.
struct GpuRunStats {
    unsigned index = 0;
    std::string name;
    std::vector<double> utilization;  // one value per sample (for the average and the 95th percentile)
    double sm_activity_sum = 0;
    std::size_t sm_activity_samples = 0;
    std::uint64_t peak_memory_bytes = 0, memory_total_bytes = 0;
};

struct RunStats {
    std::string name;
    std::vector<std::string> argv;
    double seconds = 0;
    std::size_t samples = 0;
    int exit_status = 0;
    int signal = 0;                                   // the signal that ended the command, 0 when it exited
    std::vector<GpuRunStats> gpus;                    // the job's GPUs only: those its processes used during the run
    unsigned machine_gpus = 0;                        // the GPUs the machine has
    std::optional<std::string> cuda_visible_devices;  // as the command got it
    double job_cpu_sum = 0, job_cpu_peak = 0;         // CPU % of the command and all its descendants
    std::uint64_t job_rss_peak = 0;
    std::size_t job_processes_peak = 0;
    std::uint64_t host_memory_peak = 0, host_memory_total = 0;
    double swap_bytes = 0;  // swapped in + out during the run
    double iowait_sum = 0;
    std::size_t iowait_samples = 0;
    std::vector<diagnose::Finding>
        findings;                      // every distinct (rule, subject): first sighting, or a later more severe one
    int killed_after_grace = 0;        // processes that needed SIGKILL
    bool recording_requested = false;  // a history database was named
    store::RecordingReport recording;  // what became of the record (the run's id, what is missing)
    // The Python hook's steps (python/baton): how many, their time and data wait, throughput.
    double step_ms_sum = 0, wait_ms_sum = 0;
    std::int64_t step_samples = 0;  // samples of the steps that said how many
    double step_samples_ms = 0;     // the time of those steps
    std::vector<float> step_ms;     // every step's time (how many, the median and p95)
    std::set<int> ranks;            // the ranks that sent steps: their rates add up
    // Where the steps came from: the automatic hook (python/baton/_auto.py) and/or the script's own
    // baton.torch.watch or step() (which takes over when the script has it).
    bool steps_automatic = false, steps_from_script = false;
    bool torch_hooked = false;         // a process imported PyTorch and the automatic hook was installed
    std::uint64_t events_dropped = 0;  // the hook could not send them (baton's queue was full)
    std::size_t events_rejected = 0;   // malformed datagrams, ignored
    // Stopped on a hang (on_hang = "stop"): the verdict's block, printed as the root cause.
    std::string hang_root_cause;
    // The profiler window (--profile): the last one taken, its findings (also among `findings`), or
    // why there is none.
    std::optional<profile::Analysis> profile;
    std::vector<diagnose::Finding> profile_findings;
    std::string profile_note;
    std::string memory_note;  // why an out-of-memory capture the hook named could not be used
    // A trial (RunOptions::trial): baton asked it to end at its next step; its deadline passed.
    bool trial_stopped = false, deadline_passed = false;
    // The job's energy (its GPUs' counters, the CPU packages'), and why the CPU packages' is not there.
    store::RunEnergy energy;
    std::string cpu_energy_unavailable;
};

// "python3 train.py --lr 3e-4": the program's base name and its arguments, clipped to 60
// characters (a run's or a queued job's default name).
std::string command_name(const std::vector<std::string>& argv);

// Runs the command to its end and returns the stats. An error when the command cannot be started
// (nothing ran): Child::start's, not_found or not_executable when exec failed.
Result<RunStats> run_command(const RunOptions& o);

// The end-of-run summary (several lines, for stderr); `who` begins its first line.
std::string run_summary_text(const RunStats& s, std::string_view who = "baton run");

// The same as one JSON object with a trailing newline (baton run --summary-json FILE; keys in
// docs/cli.md). Absent figures (no sample taken, no GPU used) are absent keys, never 0.
std::string run_summary_json(const RunStats& s);

}  // namespace baton::run
