// JobWatch: one job watched the way `baton run` watches its command, whoever supervises the job's
// processes: the figures of its summary, its findings (the diagnosis over the machine's window,
// attributed to the job and its GPUs; failures read in its output; the Python hook's events), and
// its record in the run history. `baton run` drives one; the queue of `baton submit` (issue 14) one
// per job, from the agent's single sampler. Nothing here starts, signals or waits for a process.
// Thread: one thread drives a JobWatch.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <utility>
#include <vector>

#include "core/thresholds.hpp"
#include "diagnose/series.hpp"
#include "diagnose/steps.hpp"
#include "gpu_memory/oom_autopsy.hpp"
#include "gpu_memory/step_memory.hpp"
#include "run/energy.hpp"
#include "run/failure_scan.hpp"
#include "run/run_command.hpp"
#include "store/history_writer.hpp"
#include "store/hook_event.hpp"

namespace baton::run {

struct JobWatchOptions {
    std::string name;
    std::vector<std::string> argv;
    std::string cwd;  // as recorded in the history
    Thresholds thresholds;
    std::optional<std::string> cuda_visible_devices;  // as the job got it, for the summary
    // Where to record the job (store/history.hpp); empty: not recorded.
    std::string db_path;
    store::HistoryWriter::Options recording;
    // --profile: the window asked of the hook and the directory its trace must be in (empty: none
    // asked, a "profile" event is ignored).
    ProfileRequest profile;
    std::string profile_dir;
    // Where the hook writes its out-of-memory captures (empty: none taken, an "oom" event is ignored).
    std::string memory_dir;
    // Called with every event the hook sent that parsed (`baton tune` reads its trials' steps, the
    // loader's and the process's facts and the losses through it); on the watch's own thread.
    std::function<void(const store::HookEvent&)> on_event;
};

// The options of a job watched from this process's point of view: its name (the command's when
// empty), its command, this process's working directory and CUDA_VISIBLE_DEVICES.
JobWatchOptions local_job_options(const std::string& name, const std::vector<std::string>& argv,
                                  const Thresholds& thresholds, const std::string& db_path,
                                  const store::HistoryWriter::Options& recording);

// Adds `snap` to the window and drops what is older than `window_seconds` before it.
void push_to_window(diagnose::Window& window, Snapshot snap, double window_seconds);

// "baton: warning rule [subject]: summary", the line printed when a finding first appears.
std::string finding_note(const diagnose::Finding& f);

class JobWatch {
  public:
    // `root`: the job's first process; the job is it and all its descendants.
    JobWatch(JobWatchOptions options, pid_t root);
    // A job of several processes started side by side (`baton launch`'s ranks): each root and its
    // descendants.
    JobWatch(JobWatchOptions options, std::vector<pid_t> roots);
    // The job's processes were started again (a restart): the new roots replace the old.
    void set_roots(std::vector<pid_t> roots) { roots_ = std::move(roots); }

    // The job's output (stderr) as it comes: read for failures (CUDA out of memory, NCCL errors).
    // Returns the findings seen for the first time.
    std::vector<diagnose::Finding> read_output(std::string_view bytes);

    // Datagrams from the Python hook (BATON_EVENTS): steps, findings the hook printed itself, and a
    // profiler window's trace (taken, judged and recorded). Returns the profile's findings seen for
    // the first time (the hook's own findings are printed by the hook).
    std::vector<diagnose::Finding> read_events(const std::vector<std::string>& datagrams);

    // One sample: `window` holds the machine's snapshots of the last window_seconds, the newest
    // last (the one accounted). Returns the findings seen for the first time, most severe ones
    // included (the caller decides which to announce).
    std::vector<diagnose::Finding> sample(const diagnose::Window& window);

    // The job ended: `exit_status` and the signal that ended it (0: it exited). Adds the end's
    // findings (a host OOM kill), records the end, and returns the figures. Call once.
    RunStats finish(int exit_status, int signal, double seconds, int killed_after_grace);

    // Before finish(): the job's own cgroup counted `kills` OOM kills (its memory.events), its
    // memory.max being `limit_bytes` (0: none). Then host_oom_kill says so, with that evidence,
    // instead of guessing from the machine's OOM counter.
    void set_cgroup_oom_kills(std::uint64_t kills, std::uint64_t limit_bytes) {
        cgroup_oom_kills_ = kills;
        cgroup_limit_bytes_ = limit_bytes;
    }

    // A finding found outside the window's rules (the hang verdict): kept as the others are, and
    // recorded in the history each time it is given (a verdict that changed is recorded again).
    void add_finding(const diagnose::Finding& f);
    // A hang verdict's whole text (its sentence and the ranks' grouped stacks), recorded with the run
    // for `baton runs show` and the report's Hang section.
    void record_hang(const std::string& rule, const std::string& text);

    // The hook's newest step (unix ms, of any rank; 0 before the first) and the median step time of
    // the run so far, in seconds (the hang verdict's default wait is ten of them).
    std::int64_t last_step_unix_ms() const { return last_step_ms_; }
    // Why the samples have no CPU package energy (the sampler's), for the summary; before finish().
    void note_cpu_energy(std::string why) { stats_.cpu_energy_unavailable = std::move(why); }
    double median_step_seconds();

    const RunStats& stats() const { return stats_; }
    // The job's run in the history once it is recorded there, else 0.
    std::int64_t run_id() const { return history_ ? history_->run_id() : 0; }

  private:
    // Keeps the first sighting of each (rule, subject), replaced only by a more severe one;
    // returns copies of the ones never seen before.
    std::vector<diagnose::Finding> merge(const std::vector<diagnose::Finding>& found);
    // A "profile" event: the trace taken from the run's profile directory, judged and recorded.
    std::vector<diagnose::Finding> take_profile_event(const store::HookEvent& e);
    // An "oom" event: the capture taken from the run's memory directory, kept and recorded; a cuda_oom
    // already said is explained again with it.
    void take_oom_event(const store::HookEvent& e);
    // The cuda_oom finding explained with the evidence there is now: PyTorch's message, the hook's
    // capture, NVML's view of the failing GPU, the allocator's per-step figures
    // (gpu_memory/oom_autopsy.hpp).
    diagnose::Finding explained_oom() const;
    // NVML's view of the GPU that CUDA device `device` of the job is (CUDA_VISIBLE_DEVICES mapped).
    std::optional<gpu_memory::GpuAtFailure> gpu_of_cuda_device(unsigned device) const;
    // NVML's view of the GPU where the job's process `pid` holds memory.
    std::optional<gpu_memory::GpuAtFailure> gpu_of_process(std::uint32_t pid) const;
    // gpu_memory_leak and gpu_memory_near_oom from each training process's allocator figures.
    std::vector<diagnose::Finding> judge_allocations() const;

    JobWatchOptions options_;
    std::vector<pid_t> roots_;
    RunStats stats_;
    std::optional<store::HistoryWriter> history_;
    std::set<unsigned> job_gpus_;  // the GPUs the job used so far
    // Findings about a GPU the job does not use (yet): a CUDA context shows up in NVML only after
    // the job initialised CUDA, so they wait; released if the GPU becomes the job's, else dropped.
    std::vector<std::pair<unsigned, diagnose::Finding>> held_;
    diagnose::StepWindow steps_;                      // the hook's steps within the window
    std::map<std::uint32_t, std::uint64_t> dropped_;  // events each sending process could not send
    FailureScanner scanner_;
    std::size_t scanned_ = 0;  // scanner findings already merged
    std::optional<std::uint64_t> oom_kills_at_start_, oom_kills_now_;
    std::uint64_t cgroup_oom_kills_ = 0, cgroup_limit_bytes_ = 0;
    // For the out-of-memory autopsy: every GPU as NVML saw it at the last sample (its UUID, its
    // processes with the job's own marked), and each training process's allocator figures by step.
    std::vector<std::pair<std::string, gpu_memory::GpuAtFailure>> gpu_view_;
    struct ProcessSteps {
        std::deque<gpu_memory::StepAllocation> steps;  // the last kKeptSteps
        unsigned device = 0;                           // its CUDA device, as it numbers them
        std::uint64_t total = 0;                       // that device's memory, as CUDA says (0: not sent)
    };
    std::map<std::uint32_t, ProcessSteps> allocations_;
    std::optional<gpu_memory::OomCapture> oom_capture_;  // the first the hook sent
    std::string explained_line_;                         // the OOM line cuda_oom was last explained by
    std::int64_t last_step_ms_ = 0;
    std::int64_t first_step_ms_ = 0;
    EnergyMeter energy_;
    double median_step_ = 0;
    std::size_t median_of_steps_ = 0;  // how many steps median_step_ was taken over
};

}  // namespace baton::run
