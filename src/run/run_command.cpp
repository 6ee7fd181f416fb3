#include "run/run_command.hpp"
#include "core/units.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/json_writer.hpp"
#include "core/percentile.hpp"
#include "core/printable.hpp"
#include "hang/flight_recorder.hpp"
#include "hang/flight_recorder_dumps.hpp"
#include "hang/hang_verdict.hpp"
#include "hang/stack_request.hpp"
#include "hang/stack_shim.hpp"
#include "run/child.hpp"
#include "sample/linux/tree_end.hpp"
#include "run/events_socket.hpp"
#include "run/job_hangs.hpp"
#include "run/job_watch.hpp"
#include "run/watch_step.hpp"
#include "run/memory_capture.hpp"
#include "formats/finding_json.hpp"
#include "store/run_owner.hpp"

namespace baton::run {

namespace {

// The summary's line about the record: where, and which part of it is missing.
std::string recording_text(const RunStats& s) {
    const store::RecordingReport& r = s.recording;
    if (!r.run_id) return "  not recorded in " + r.db_path + ": " + (r.error.empty() ? "unknown error" : r.error);
    std::string out = fmt::format("  recorded as run {} in {}", r.run_id, r.db_path);
    if (r.complete()) return out;
    std::vector<std::string> missing;
    if (r.samples_lost) missing.push_back(fmt::format("{} of {} samples", r.samples_lost, s.samples));
    if (r.steps_lost) missing.push_back(fmt::format("{} steps", r.steps_lost));
    if (r.findings_lost) missing.push_back(fmt::format("{} findings", r.findings_lost));
    if (r.machine_lost) missing.push_back("the machine (CPUs, memory, GPUs)");
    if (!r.end_recorded) missing.push_back("the end (exit status, summary)");
    out += ", incomplete: missing ";
    for (std::size_t i = 0; i < missing.size(); ++i)
        out += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
    if (!r.error.empty()) out += " (" + r.error + ")";
    return out;
}

std::string bytes_text(double bytes) {
    if (bytes >= 1073741824.0) return format_gib(bytes);
    return fmt::format("{:.0f} MiB", bytes / 1048576.0);
}

// The summary's derived figures, computed once for its text and its JSON view.
double utilization_avg(const GpuRunStats& g) {
    double sum = 0;
    for (double u : g.utilization) sum += u;
    return g.utilization.empty() ? 0 : sum / static_cast<double>(g.utilization.size());
}

struct StepFigures {
    double median_ms = 0, p95_ms = 0;
    std::optional<double> wait_percent;        // of the summed step time
    std::optional<double> samples_per_second;  // summed over the ranks
};

// "auto" when every step came from the automatic hook, "hook" when the script's own hook sent any.
const char* steps_source(const RunStats& s) {
    return s.steps_automatic && !s.steps_from_script ? "auto" : "hook";
}

StepFigures step_figures(const RunStats& s) {
    StepFigures f;
    const std::vector<double> ms(s.step_ms.begin(), s.step_ms.end());
    f.median_ms = percentile(ms, 50);
    f.p95_ms = percentile(ms, 95);
    if (s.step_ms_sum > 0) f.wait_percent = 100.0 * s.wait_ms_sum / s.step_ms_sum;
    if (s.step_samples_ms > 0)
        f.samples_per_second =
            static_cast<double>(s.step_samples) * 1000.0 / s.step_samples_ms * static_cast<double>(s.ranks.size());
    return f;
}

// --profile=auto: a window asked of the hook once a finding the profiler explains fired, or a busy GPU's
// SMs sat idle, after the sample `step` judged last. True once asked (at most once a run).
bool profile_auto(WatchStep& step, const JobWatch& watch, const Thresholds& thresholds,
                  const std::string& profile_dir) {
    std::string reason;
    for (const diagnose::Finding& f : step.new_findings())
        if (explained_by_profile(f)) {
            reason = f.rule + " fired";
            break;
        }
    if (reason.empty()) {
        std::vector<unsigned> gpus;
        for (const GpuRunStats& g : watch.stats().gpus) gpus.push_back(g.index);
        reason = busy_gpu_with_idle_sms(step.window(), gpus, thresholds);
    }
    if (reason.empty()) return false;
    const Status t = trigger_profile_window(profile_dir);
    step.say(t.ok() ? "baton: " + reason + ": recording a profiler window (--profile=auto)"
                    : "baton: " + t.error().message);
    return true;
}

}  // namespace

// "python3 train.py --lr 3e-4": the program's base name and its arguments, clipped.
std::string command_name(const std::vector<std::string>& argv) {
    std::string out;
    for (std::size_t i = 0; i < argv.size(); ++i) {
        std::string w = argv[i];
        if (i == 0 && w.find('/') != std::string::npos) w = w.substr(w.rfind('/') + 1);
        out += (out.empty() ? "" : " ") + w;
    }
    return out.size() > 60 ? out.substr(0, 57) + "..." : out;
}

// What the hook writes into and reads from, in the run's private directory, each named to the command
// (and everything it starts) through this process's environment: the events socket, the stack
// handler, the Flight Recorder's dumps, the profiler window's and the out-of-memory capture's
// directories. What cannot be made is said, and the run goes on without it.
struct HookPlaces {
    std::optional<EventsSocket> events;
    hang::FlightRecorderPaths flight_recorder;
    std::string profile_dir, memory_dir;  // empty: none
};

HookPlaces prepare_hook(const RunOptions& o) {
    HookPlaces h;
    std::optional<EventsSocket>& events = h.events;
    hang::FlightRecorderPaths& flight_recorder = h.flight_recorder;
    // The hook's socket.
    if (Result<EventsSocket> s = EventsSocket::open(); s.ok()) {
        events.emplace(std::move(*s));
        setenv("BATON_EVENTS", events->path().c_str(), 1);
    } else {
        std::fprintf(stderr, "baton: the Python hook's step events will not be recorded: %s\n",
                     escaped_line(s.error().message).c_str());
    }
    // Its Python processes get the stack handler (`baton stacks`, the hang verdict).
    if (events) {
        const std::string shim = events->directory() + "/python", stacks = events->directory() + "/stacks";
        if (Status st = hang::install_shim(shim, stacks); st.ok()) {
            const char* inherited = std::getenv("PYTHONPATH");
            for (const auto& [k, v] :
                 hang::shim_environment(shim, stacks, inherited ? std::optional<std::string>(inherited) : std::nullopt))
                setenv(k.c_str(), v.c_str(), 1);
            // And PyTorch's Flight Recorder dumps beside the stacks, unless the user has set where.
            const std::string fr = stacks + "/fr";
            if (hang::make_flight_recorder_dir(fr).ok()) {
                const hang::EnvGet env = [](const std::string& k) -> std::optional<std::string> {
                    const char* v = std::getenv(k.c_str());
                    return v ? std::optional<std::string>(v) : std::nullopt;
                };
                flight_recorder = hang::flight_recorder_paths(fr, env);
                for (const auto& [k, v] : hang::flight_recorder_environment(fr, env)) setenv(k.c_str(), v.c_str(), 1);
            }
        } else {
            std::fprintf(stderr, "baton: baton stacks will not reach the command's Python processes: %s\n",
                         escaped_line(st.error().message).c_str());
        }
    }
    // --profile: the hook records a window of steps into the same private directory.
    if (o.profile.enabled) {
        if (!events) {
            std::fprintf(stderr, "baton: --profile records nothing: the hook's socket could not be opened\n");
        } else if (const std::string dir = events->directory() + "/profile"; ::mkdir(dir.c_str(), 0700) == 0) {
            h.profile_dir = dir;
            for (const auto& [k, v] : profile_environment(dir, o.profile)) setenv(k.c_str(), v.c_str(), 1);
        } else {
            std::fprintf(stderr, "baton: --profile records nothing: cannot make %s: %s\n", dir.c_str(),
                         std::strerror(errno));
        }
    }
    // The hook captures the allocator at a CUDA out-of-memory error into the same private directory.
    if (events) {
        if (const std::string dir = events->directory() + "/memory"; ::mkdir(dir.c_str(), 0700) == 0) {
            h.memory_dir = dir;
            for (const auto& [k, v] : memory_environment(dir, o.memory_history)) setenv(k.c_str(), v.c_str(), 1);
        } else {
            std::fprintf(stderr, "baton: an out-of-memory error will not be captured: cannot make %s: %s\n",
                         dir.c_str(), std::strerror(errno));
        }
    } else if (o.memory_history > 0) {
        std::fprintf(stderr, "baton: --memory-history records nothing: the hook's socket could not be opened\n");
    }
    return h;
}

// The command started with the hook's places and a trial's settings in its environment alone (this
// process's is put back once it started).
Result<Child> start_command(const RunOptions& o) {
    // Its processes say whose they are (baton clean lists them once this baton is gone).
    setenv(store::kOwnerVariable, store::owner_token(store::current_owner()).c_str(), 1);
    ChildStart how;
    how.capture_stderr = true;
    std::vector<std::pair<std::string, std::optional<std::string>>> restore;
    if (o.trial) {
        how.output_fd = o.trial->output_fd;
        for (const auto& [k, v] : o.trial->environment) {
            const char* was = std::getenv(k.c_str());
            restore.emplace_back(k, was ? std::optional<std::string>(was) : std::nullopt);
            setenv(k.c_str(), v.c_str(), 1);
        }
    }
    if (o.live) setenv("BATON_LIVE_TUNE", o.live->control_file.c_str(), 1);
    Result<Child> started = Child::start(o.argv, how);
    for (const auto& [k, was] : restore) was ? (void)setenv(k.c_str(), was->c_str(), 1) : (void)unsetenv(k.c_str());
    return started;
}

// Where a trial's own reasons to end stand.
struct TrialState {
    bool stopped = false;          // enough steps: the hook was told to end the script at its next step's end
    bool deadline_passed = false;  // its deadline came first
};

// A trial's turn: enough steps, or its deadline. True when the command must be ended from outside now
// (the deadline, or a stop file that could not be written).
bool trial_turn(const TrialControl& t, double ran, TrialState& flags) {
    bool end = false;
    if (!flags.stopped && t.enough && t.enough()) {
        end = !write_file_atomically(t.stop_file, "").ok();
        flags.stopped = true;
    }
    if (t.deadline_seconds > 0 && !flags.deadline_passed && ran >= t.deadline_seconds) {
        flags.deadline_passed = true;
        end = true;
    }
    return end;
}

Result<RunStats> run_command(const RunOptions& o) {
    os::become_subreaper();
    catch_stop_signals();
    HookPlaces hook = prepare_hook(o);
    std::optional<EventsSocket>& events = hook.events;
    Result<Child> started = start_command(o);
    if (!started.ok()) return started.error();
    Child child = std::move(*started);
    const double start = monotonic_seconds();
    JobWatchOptions job = local_job_options(o.name, o.argv, o.thresholds, o.db_path, o.recording);
    job.profile = o.profile;
    job.profile_dir = hook.profile_dir;
    job.memory_dir = hook.memory_dir;
    if (o.trial) job.on_event = o.trial->on_event;
    if (o.live) job.on_event = o.live->on_event;
    JobWatch watch(std::move(job), child.pid());
    bool profile_triggered = false;

    WatchStep::Options wo;
    wo.sampler = o.sampler;
    wo.sampler.job_roots = {static_cast<std::uint32_t>(child.pid())};  // where the command writes: disk_space_low
    wo.interval_seconds = o.interval_seconds;
    wo.window_seconds = o.thresholds.window_seconds;
    wo.quiet = o.quiet;
    if (o.live) wo.on_sample = o.live->on_sample;
    WatchStep step(watch, events ? &*events : nullptr, std::move(wo));
    // The command's group, asked to end by a stop signal, a hang or a trial's end: SIGKILL after the
    // grace; the leftovers outside it end with the tree once the command has gone (end_tree).
    os::TreeEnd stopping({[&child](int sig) {
                              child.signal_group(sig);
                              return 1;
                          },
                          [&child] { return ::kill(-child.group(), 0) == 0; }},
                         3600);
    const int output = o.trial ? o.trial->output_fd : STDERR_FILENO;  // where the command's stderr goes on
    TrialState trial;
    // Passes the command's stderr on unchanged and reads along; true while it may have more.
    auto pump = [&] {
        char buf[16384];
        for (;;) {
            const ssize_t n = read(child.stderr_fd(), buf, sizeof buf);
            if (n <= 0) return n < 0 && errno == EAGAIN;
            for (ssize_t off = 0; off < n;) {
                const ssize_t w = write(output, buf + off, static_cast<std::size_t>(n - off));
                if (w <= 0) break;  // our stderr is gone: keep reading so the command never blocks
                off += w;
            }
            step.read_output(std::string_view(buf, static_cast<std::size_t>(n)));
        }
    };
    JobHangs hangs(o.hang, o.stop_on_hang, "baton run", events ? events->directory() + "/stacks" : "",
                   hook.flight_recorder);
    bool stopped_on_hang = false;
    // The command's ranks as the verdict sees them (job_ranks: RANK'd Python processes, or those of a
    // loop that sends the hook's steps).
    auto ranks = [&] { return job_ranks(child.pid(), watch.last_step_unix_ms() != 0); };
    while (!child.poll_exit()) {
        const double now = monotonic_seconds();
        step.take_events();
        if (child.stderr_fd() >= 0) pump();
        if (events && !stopping.ending() && hangs.turn(watch, ranks)) {
            stopped_on_hang = true;
            stopping.begin(now, o.grace_seconds);
        }
        if (o.trial && trial_turn(*o.trial, now - start, trial)) stopping.begin(now, o.grace_seconds);
        if (const int sig = take_stop_signal()) stopping.begin(now, o.grace_seconds, sig);
        stopping.step(now);
        const WatchStep::Sampled sampled = step.sample(now, [&] { return !child.poll_exit(); });
        if (sampled == WatchStep::Sampled::job_ended) break;
        if (sampled == WatchStep::Sampled::judged && o.profile.automatic && !hook.profile_dir.empty() &&
            !profile_triggered)
            profile_triggered = profile_auto(step, watch, o.thresholds, hook.profile_dir);
        step.speak(now);
        sleep_seconds(step.wait_seconds());
    }
    const double ran = monotonic_seconds() - start;
    // What the command wrote last (a traceback) may still be in the pipe.
    if (child.stderr_fd() >= 0)
        for (int i = 0; i < 100 && pump(); ++i) sleep_seconds(0.002);
    step.take_events();  // the last steps
    // Workers the command left behind (reparented to baton) end with it.
    const int killed_after_grace = stopping.killed() + child.end_tree(std::min(o.grace_seconds, 2.0));
    step.speak_rest();
    if (Sampler* sampler = step.sampler()) watch.note_cpu_energy(sampler->cpu_energy_unavailable());
    RunStats stats = stopped_on_hang
                         ? watch.finish(hang::kExitHung, 0, ran, killed_after_grace)
                         : watch.finish(child.exit_status(), child.terminating_signal(), ran, killed_after_grace);
    stats.trial_stopped = trial.stopped;
    stats.deadline_passed = trial.deadline_passed;
    if (stopped_on_hang) stats.hang_root_cause = hang::hang_text(*hangs.last_verdict(), "baton run: stopped on a hang");
    if (!hook.profile_dir.empty() && !stats.profile && stats.profile_note.empty())
        stats.profile_note =
            no_profile_note(static_cast<std::int64_t>(stats.step_ms.size()), o.profile, profile_triggered);
    return stats;
}

std::string run_summary_text(const RunStats& s, std::string_view who) {
    std::string out;
    auto line = [&](const std::string& l) { out.append(l).push_back('\n'); };
    line(fmt::format(
        "{}: {} {} after {:.1f} s ({} samples)", who, s.name,
        s.signal ? fmt::format("was killed by signal {}", s.signal) : fmt::format("exited with {}", s.exit_status),
        s.seconds, s.samples));
    for (const GpuRunStats& g : s.gpus) {
        line(fmt::format("  GPU{} {}: utilisation avg {:.0f} % p95 {:.0f} %{}, peak memory {} of {}", g.index, g.name,
                         utilization_avg(g), percentile(g.utilization, 95),
                         g.sm_activity_samples
                             ? fmt::format(", SM activity avg {:.0f} %",
                                           g.sm_activity_sum / static_cast<double>(g.sm_activity_samples))
                             : "",
                         bytes_text(static_cast<double>(g.peak_memory_bytes)),
                         bytes_text(static_cast<double>(g.memory_total_bytes))));
    }
    if (s.gpus.empty() && s.samples && (s.machine_gpus || s.cuda_visible_devices)) {
        // A run meant for a GPU that trained on the CPU deserves this line.
        line(fmt::format(
            "  GPU: the job used none{}{}",
            s.machine_gpus ? fmt::format(" of the machine's {}", s.machine_gpus) : std::string(),
            s.cuda_visible_devices ? " (CUDA_VISIBLE_DEVICES=" + *s.cuda_visible_devices + ")" : std::string()));
    }
    if (s.samples == 0) {  // `baton run -- true`: nothing to average
        line("  finished before the first sample: nothing was measured");
    } else {
        line(fmt::format("  job: CPU avg {:.0f} % peak {:.0f} % (of one core), RSS peak {}, up to {} processes",
                         s.job_cpu_sum / static_cast<double>(s.samples), s.job_cpu_peak,
                         bytes_text(static_cast<double>(s.job_rss_peak)), s.job_processes_peak));
        line(fmt::format("  host: memory peak {} of {}, swapped {:.1f} MB, I/O wait avg {:.1f} %",
                         bytes_text(static_cast<double>(s.host_memory_peak)),
                         bytes_text(static_cast<double>(s.host_memory_total)), s.swap_bytes / 1e6,
                         s.iowait_samples ? s.iowait_sum / static_cast<double>(s.iowait_samples) : 0));
    }
    if (!s.step_ms.empty()) {
        const StepFigures f = step_figures(s);
        std::string l =
            fmt::format("  steps ({}): {}, median {:.1f} ms p95 {:.1f} ms, data wait {:.0f} % of step time",
                        steps_source(s) == std::string_view("auto") ? "optimizer steps, no code change" : "baton hook",
                        s.step_ms.size(), f.median_ms, f.p95_ms, f.wait_percent.value_or(0));
        if (f.samples_per_second)
            l += fmt::format(", {:.0f} samples/s{}", *f.samples_per_second,
                             s.ranks.size() > 1 ? fmt::format(" over {} ranks", s.ranks.size()) : std::string());
        if (s.events_dropped) l += fmt::format(", {} events lost (baton read too slowly)", s.events_dropped);
        line(l);
    } else if (s.torch_hooked) {
        // Said once, here: a script that imports PyTorch but never steps an optimizer.
        line(
            "  steps: none: PyTorch was imported but no optimizer stepped (inference or evaluation?); a loop that "
            "updates weights without torch.optim marks its steps with baton.torch.step()");
    }
    if (!s.energy.empty()) {
        std::string l = "  energy: " + store::energy_text(s.energy);
        if (!s.energy.cpu_joules && !s.cpu_energy_unavailable.empty())
            l += " (CPU packages not read: " + s.cpu_energy_unavailable + ")";
        line(l);
    } else if (!s.step_ms.empty() && !s.cpu_energy_unavailable.empty()) {
        line(std::string("  energy: not measured (") +
             (s.gpus.empty() ? "no GPU" : "the job's GPUs report no energy counter") +
             "; CPU packages: " + s.cpu_energy_unavailable + ")");
    }
    if (s.events_rejected) line(fmt::format("  {} malformed event(s) on the hook's socket ignored", s.events_rejected));
    if (s.killed_after_grace) line(fmt::format("  {} process(es) needed SIGKILL to end", s.killed_after_grace));
    if (s.recording_requested) line(recording_text(s));
    if (s.recording.longest_wait_seconds >= 1)
        line(fmt::format("  history writes waited up to {:.1f} s for the database{} (the command's output did not)",
                         s.recording.longest_wait_seconds,
                         s.recording.error.empty() ? std::string() : " (" + s.recording.error + ")"));
    if (s.findings.empty()) line("  findings: none");
    for (const diagnose::Finding& f : s.findings) {
        line(fmt::format("  {} {} [{}]: {}", severity_name(f.severity), f.rule, f.subject, f.summary));
        line("      fix: " + f.recommendation);
        line("      see: baton explain " + f.rule);
    }
    return out;
}

std::string run_summary_json(const RunStats& s) {
    std::string out;
    JsonWriter w(out);
    const auto n = static_cast<double>(s.samples);
    w.begin_object();
    w.field("name", s.name);
    w.key("command");
    w.begin_array();
    for (const std::string& a : s.argv) w.value(a);
    w.end_array();
    w.field("seconds", s.seconds);
    w.field("samples", static_cast<std::uint64_t>(s.samples));
    if (s.signal)
        w.field("signal", s.signal);
    else
        w.field("exit_status", s.exit_status);
    if (s.recording.run_id) {
        w.field("run_id", s.recording.run_id);
        w.field("db", s.recording.db_path);
    }
    if (s.recording_requested) {
        const store::RecordingReport& r = s.recording;
        w.key("history");
        w.begin_object();
        w.field("db", r.db_path);
        if (r.run_id) w.field("run_id", r.run_id);
        w.field("complete", r.complete());
        w.field("samples_lost", r.samples_lost);
        w.field("steps_lost", r.steps_lost);
        w.field("findings_lost", r.findings_lost);
        w.field("machine_lost", r.machine_lost);
        w.field("end_recorded", r.end_recorded);
        w.field("longest_wait_seconds", r.longest_wait_seconds);
        if (!r.error.empty()) w.field("error", r.error);
        w.end_object();
    }
    w.field("machine_gpus", s.machine_gpus);
    w.optional_field("cuda_visible_devices", s.cuda_visible_devices);
    w.key("gpus");  // the job's
    w.begin_array();
    for (const GpuRunStats& g : s.gpus) {
        w.begin_object();
        w.field("index", g.index);
        w.field("name", g.name);
        if (!g.utilization.empty()) {
            w.field("utilization_avg_percent", utilization_avg(g));
            w.field("utilization_p95_percent", percentile(g.utilization, 95));
        }
        if (g.sm_activity_samples)
            w.field("sm_activity_avg_percent", g.sm_activity_sum / static_cast<double>(g.sm_activity_samples));
        w.field("memory_peak_bytes", g.peak_memory_bytes);
        w.field("memory_total_bytes", g.memory_total_bytes);
        w.end_object();
    }
    w.end_array();
    if (s.samples) {
        w.key("job");
        w.begin_object();
        w.field("cpu_avg_percent", s.job_cpu_sum / n);
        w.field("cpu_peak_percent", s.job_cpu_peak);
        w.field("rss_peak_bytes", s.job_rss_peak);
        w.field("processes_peak", static_cast<std::uint64_t>(s.job_processes_peak));
        w.end_object();
        w.key("host");
        w.begin_object();
        w.field("memory_peak_bytes", s.host_memory_peak);
        w.field("memory_total_bytes", s.host_memory_total);
        w.field("swapped_bytes", s.swap_bytes);
        if (s.iowait_samples) w.field("iowait_avg_percent", s.iowait_sum / static_cast<double>(s.iowait_samples));
        w.end_object();
    }
    if (!s.step_ms.empty()) {
        const StepFigures f = step_figures(s);
        w.key("steps");
        w.begin_object();
        w.field("count", static_cast<std::uint64_t>(s.step_ms.size()));
        w.field("median_seconds", f.median_ms / 1000.0);
        w.field("p95_seconds", f.p95_ms / 1000.0);
        w.optional_field("data_wait_percent", f.wait_percent);
        w.optional_field("samples_per_second", f.samples_per_second);
        w.field("ranks", static_cast<std::uint64_t>(s.ranks.size()));
        w.field("source", steps_source(s));
        w.field("events_dropped", s.events_dropped);
        w.end_object();
    }
    if (!s.energy.empty()) {
        w.key("energy");
        store::write_energy_json(w, s.energy);
    }
    w.field("killed_after_grace", s.killed_after_grace);
    w.key("findings");
    w.begin_array();
    for (const diagnose::Finding& f : s.findings) formats::write_finding_json(w, f);
    w.end_array();
    w.end_object();
    w.finish();
    out.push_back('\n');
    return out;
}

}  // namespace baton::run
