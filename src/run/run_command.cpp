#include "run/run_command.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <unistd.h>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "core/percentile.hpp"
#include "core/printable.hpp"
#include "diagnose/job.hpp"
#include "diagnose/rules.hpp"
#include "run/child.hpp"
#include "run/events_socket.hpp"
#include "run/failure_scan.hpp"
#include "sample/gpu/throttle_reasons.hpp"
#include "store/finding_json.hpp"
#include "store/history_writer.hpp"
#include "store/hook_event.hpp"

namespace baton {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void on_stop(int sig) {
    g_stop_signal = sig;
}

// The command and all its descendants in one snapshot, summed (walked once per tick: the summary
// and the history both use it).
struct JobTotals {
    double cpu_percent = 0;
    std::uint64_t rss_bytes = 0;
    std::size_t processes = 0;
    std::set<std::uint32_t> pids;  // in baton's pid namespace
};

JobTotals job_totals(const Snapshot& snap, pid_t root) {
    JobTotals j;
    for (const ProcessInfo* p : process_and_descendants(snap, static_cast<std::uint32_t>(root))) {
        j.cpu_percent += p->cpu_percent.value_or(0);
        j.rss_bytes += p->rss_bytes;
        ++j.processes;
        j.pids.insert(p->pid);
    }
    return j;
}

// The job's GPUs: those where one of its processes holds a context (joined to the process table
// by the sampler: NVML's process list, or the GPU device files a process has open). Once a GPU
// is the job's it stays so for the run.
void note_job_gpus(const Snapshot& snap, const JobTotals& job, std::set<unsigned>& gpus) {
    for (const ProcessInfo& p : snap.processes)
        if (!p.gpu_indices.empty() && job.pids.count(p.pid)) gpus.insert(p.gpu_indices.begin(), p.gpu_indices.end());
}

// The GPU a finding is about, if any: its subject's GPU, or the GPU a process subject runs on.
std::optional<unsigned> gpu_of_finding(const Finding& f, const Snapshot& snap) {
    unsigned n = 0;
    if (std::sscanf(f.subject.c_str(), "gpu:%u", &n) == 1) return n;
    if (std::sscanf(f.subject.c_str(), "pid:%u", &n) == 1)
        for (const GpuInfo& g : snap.gpus)
            for (const GpuProcess& p : g.processes)
                if (p.local_pid == n) return g.index;
    return std::nullopt;
}

// A finding about one of the job's own processes is about "job": the same subject in every run
// (pids change), so compare can match it, and one finding for all the job's ranks.
void attribute_to_job(Finding& f, const JobTotals& job) {
    unsigned pid = 0;
    if (std::sscanf(f.subject.c_str(), "pid:%u", &pid) == 1 && job.pids.count(pid)) f.subject = "job";
}

// Adds one snapshot to the aggregates: the host's figures, the job's, and its GPUs'.
void account(RunStats& s, const Snapshot& snap, const JobTotals& job, double dt, const std::set<unsigned>& job_gpus) {
    ++s.samples;
    s.machine_gpus = std::max(s.machine_gpus, static_cast<unsigned>(snap.gpus.size()));
    for (const GpuInfo& g : snap.gpus) {
        if (g.stale || g.error || !job_gpus.count(g.index)) continue;
        auto it = std::find_if(s.gpus.begin(), s.gpus.end(), [&](const GpuRunStats& x) { return x.index == g.index; });
        if (it == s.gpus.end()) {
            s.gpus.push_back(GpuRunStats{});
            it = s.gpus.end() - 1;
            it->index = g.index;
            it->name = g.name;
        }
        if (g.utilization_percent) it->utilization.push_back(*g.utilization_percent);
        if (g.sm_activity_percent) {
            it->sm_activity_sum += *g.sm_activity_percent;
            ++it->sm_activity_samples;
        }
        it->peak_memory_bytes = std::max(it->peak_memory_bytes, g.memory_used_bytes.value_or(0));
        it->memory_total_bytes = g.memory_total_bytes.value_or(it->memory_total_bytes);
    }
    s.job_cpu_sum += job.cpu_percent;
    s.job_cpu_peak = std::max(s.job_cpu_peak, job.cpu_percent);
    s.job_rss_peak = std::max(s.job_rss_peak, job.rss_bytes);
    s.job_processes_peak = std::max(s.job_processes_peak, job.processes);
    s.host_memory_peak = std::max(s.host_memory_peak, snap.memory.used_bytes);
    s.host_memory_total = snap.memory.total_bytes;
    if (snap.swap.in_bytes_per_second && snap.swap.out_bytes_per_second)
        s.swap_bytes += (*snap.swap.in_bytes_per_second + *snap.swap.out_bytes_per_second) * dt;
    if (snap.cpu.total.iowait_percent) {
        s.iowait_sum += *snap.cpu.total.iowait_percent;
        ++s.iowait_samples;
    }
}

// The figures of one tick that the history keeps (GPUs: the job's).
RunSample to_run_sample(const Snapshot& snap, const JobTotals& job, const std::set<unsigned>& job_gpus) {
    constexpr float gib = 1073741824.0f;
    RunSample r;
    r.t_ms = snap.time_unix_ms;
    r.cpu_percent = static_cast<float>(snap.cpu.total.utilization_percent.value_or(0));
    r.iowait_percent = static_cast<float>(snap.cpu.total.iowait_percent.value_or(0));
    r.memory_used_gib = static_cast<float>(snap.memory.used_bytes) / gib;
    r.swap_mb_per_s = static_cast<float>(
        (snap.swap.in_bytes_per_second.value_or(0) + snap.swap.out_bytes_per_second.value_or(0)) / 1e6);
    r.job_cpu_percent = static_cast<float>(job.cpu_percent);
    r.job_rss_gib = static_cast<float>(job.rss_bytes) / gib;
    double read = 0, write = 0;
    for (const DiskStats& d : snap.disks) {
        read += d.read_bytes_per_second.value_or(0);
        write += d.write_bytes_per_second.value_or(0);
    }
    r.disk_read_mb_s = static_cast<float>(read / 1e6);
    r.disk_write_mb_s = static_cast<float>(write / 1e6);
    for (const GpuInfo& g : snap.gpus) {
        if (g.stale || g.error || !job_gpus.count(g.index)) continue;
        RunSample::Gpu x;
        x.index = static_cast<std::uint8_t>(g.index);
        x.utilization = static_cast<float>(g.utilization_percent.value_or(0));
        x.memory_used_gib = static_cast<float>(g.memory_used_bytes.value_or(0)) / gib;
        x.sm_activity = g.sm_activity_percent ? static_cast<float>(*g.sm_activity_percent) : -1.0f;
        x.power_watts = g.power_watts ? static_cast<float>(*g.power_watts) : -1.0f;
        x.temperature_celsius = g.temperature_celsius ? static_cast<float>(*g.temperature_celsius) : -1.0f;
        x.sm_clock_mhz = g.sm_clock_mhz ? static_cast<float>(*g.sm_clock_mhz) : -1.0f;
        if (g.throttle_reasons) x.throttle_reasons = throttle_reason_bits(*g.throttle_reasons);
        r.gpus.push_back(x);
    }
    return r;
}

void account_step(RunStats& s, const StepEvent& e) {
    s.step_ms_sum += e.step_ms;
    s.wait_ms_sum += e.wait_ms;
    if (e.samples) {
        s.step_samples += *e.samples;
        s.step_samples_ms += e.step_ms;
    }
    s.step_ms.push_back(static_cast<float>(e.step_ms));
    s.ranks.insert(e.rank);
}

std::vector<RunGpu> run_gpus(const Snapshot& snap, const std::set<unsigned>& job_gpus) {
    std::vector<RunGpu> out;
    for (const GpuInfo& g : snap.gpus)
        if (job_gpus.count(g.index)) out.push_back({g.index, g.uuid, g.name, g.memory_total_bytes.value_or(0)});
    return out;
}

// Keeps the first sighting of each (rule, subject), replaced only by a more severe one (the end of
// a run, its workers gone and the trainer tearing down, would otherwise overwrite the evidence seen
// while it ran); returns the ones never seen before.
std::vector<const Finding*> merge_findings(RunStats& s, const std::vector<Finding>& found) {
    std::vector<const Finding*> fresh;
    for (const Finding& f : found) {
        auto it = std::find_if(s.findings.begin(), s.findings.end(),
                               [&](const Finding& x) { return x.rule == f.rule && x.subject == f.subject; });
        if (it == s.findings.end()) {
            s.findings.push_back(f);
            fresh.push_back(&f);
        } else if (f.severity > it->severity) {  // the first sighting's evidence, unless it grew worse
            *it = f;
        }
    }
    return fresh;
}

// The summary's line about the record: where, and which part of it is missing.
std::string recording_text(const RunStats& s) {
    const RecordingReport& r = s.recording;
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
    if (bytes >= 1073741824.0) return fmt::format("{:.1f} GiB", bytes / 1073741824.0);
    return fmt::format("{:.0f} MiB", bytes / 1048576.0);
}

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

}  // namespace

RunStats run_command(const RunOptions& o, std::string& error) {
    RunStats stats;
    stats.argv = o.argv;
    stats.name = o.name.empty() ? command_name(o.argv) : o.name;
    become_subreaper();
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

    // The hook's socket, named to the command (and everything it starts) through the environment.
    std::optional<EventsSocket> events;
    if (Result<EventsSocket> s = EventsSocket::open(); s.ok()) {
        events.emplace(std::move(*s));
        setenv("BATON_EVENTS", events->path().c_str(), 1);
    } else {
        std::fprintf(stderr, "baton: the Python hook's step events will not be recorded: %s\n",
                     escaped_line(s.error().message).c_str());
    }
    Result<Child> started = Child::start(o.argv, &stats.start_errno, /*capture_stderr=*/true);
    if (!started.ok()) {
        error = started.error().message;
        return stats;
    }
    Child child = std::move(*started);
    const double start = monotonic_seconds();
    // The history, written on its own thread (store/history_writer.hpp): a run that cannot be
    // recorded still runs, and the database never holds the command's output back.
    std::optional<HistoryWriter> history;
    if (!o.db_path.empty()) {
        RunHeader header;
        header.name = stats.name;
        for (const std::string& a : o.argv) header.command += (header.command.empty() ? "" : " ") + a;
        char cwd[4096] = "";
        if (getcwd(cwd, sizeof cwd)) header.cwd = cwd;
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        header.host = host;
        header.start_ms = unix_millis();
        history.emplace(o.db_path, std::move(header), o.recording);
        stats.recording_requested = true;
    }
    SamplerOptions so = o.sampler;
    so.priming_seconds = std::min(0.1, o.interval_seconds);
    Sampler sampler(so);
    Window window;                // the last window_seconds, for the rules
    std::set<unsigned> job_gpus;  // the GPUs the job used so far
    // Findings about a GPU the job does not use (yet): a CUDA context shows up in NVML only after
    // the job initialised CUDA, so they wait; released if the GPU becomes the job's, else dropped.
    std::vector<std::pair<unsigned, Finding>> held;
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) stats.cuda_visible_devices = v;
    StepWindow steps;                                // the hook's steps within that window
    std::map<std::uint32_t, std::uint64_t> dropped;  // by each sending process (its count is cumulative)
    // Reads the hook's events: into the history, the summary and the rules' step window.
    auto take_events = [&] {
        if (!events) return;
        std::vector<StepEvent> fresh;
        for (const std::string& datagram : events->drain()) {
            Result<HookEvent> e = parse_hook_event(datagram);
            if (!e.ok()) {
                ++stats.events_rejected;
                continue;
            }
            dropped[e->step.pid] = std::max(dropped[e->step.pid], e->dropped);
            if (e->finding) {                                 // from baton.torch.check(), which printed it already
                const std::vector<Finding> one{*e->finding};  // merge_findings points into it
                for (const Finding* x : merge_findings(stats, one))
                    if (history) history->add_finding(e->step.t_ms, *x);
                continue;
            }
            if (e->type != "step") continue;
            account_step(stats, e->step);
            steps.push_back(
                {e->step.t_ms, e->step.pid, e->step.rank, e->step.step_ms, e->step.wait_ms, e->step.samples});
            fresh.push_back(std::move(e->step));
        }
        if (history) history->add_steps(std::move(fresh));
    };
    SampleSchedule schedule(o.interval_seconds);
    double kill_at = -1;
    double last_note = -1e9;
    std::deque<std::string> pending;  // notes waiting for the rate limit
    FailureScanner scanner;
    std::size_t scanned = 0;  // scanner findings already merged
    std::optional<std::uint64_t> oom_kills_at_start, oom_kills_now;
    // Passes the command's stderr on unchanged and reads along; true while it may have more.
    auto pump = [&] {
        char buf[16384];
        for (;;) {
            const ssize_t n = read(child.stderr_fd(), buf, sizeof buf);
            if (n <= 0) return n < 0 && errno == EAGAIN;
            for (ssize_t off = 0; off < n;) {
                const ssize_t w = write(STDERR_FILENO, buf + off, static_cast<std::size_t>(n - off));
                if (w <= 0) break;  // our stderr is gone: keep reading so the command never blocks
                off += w;
            }
            scanner.feed(std::string_view(buf, static_cast<std::size_t>(n)));
        }
    };
    auto take_scanner_findings = [&] {
        const auto& f = scanner.findings();
        for (; scanned < f.size(); ++scanned) {
            const std::vector<Finding> one{f[scanned]};
            for (const Finding* x : merge_findings(stats, one)) {
                if (history) history->add_finding(unix_millis(), *x);
                if (!o.quiet)
                    pending.push_front(fmt::format("baton: {} {} [{}]: {}", severity_name(x->severity), x->rule,
                                                   x->subject, x->summary));
            }
        }
    };
    while (!child.poll_exit()) {
        const double now = monotonic_seconds();
        if (child.stderr_fd() >= 0) pump();
        take_scanner_findings();
        take_events();
        if (g_stop_signal) {
            const int sig = g_stop_signal;
            g_stop_signal = 0;
            child.signal_group(sig);
            if (kill_at < 0) kill_at = now + o.grace_seconds;
        }
        if (kill_at >= 0 && now >= kill_at) {
            child.signal_group(SIGKILL);
            ++stats.killed_after_grace;
            kill_at = now + 3600;  // once
        }
        if (now >= schedule.next()) {
            Snapshot snap;
            sampler.take(snap);
            schedule.taken(monotonic_seconds());
            // The first sample spans the sampler's priming read: a command that ended within it
            // (`baton run -- true`) was never seen running, and its sample would be the machine
            // after it.
            if (stats.samples == 0 && child.poll_exit()) break;
            const JobTotals job = job_totals(snap, child.pid());
            const std::size_t gpus_before = job_gpus.size();
            note_job_gpus(snap, job, job_gpus);
            account(stats, snap, job, snap.interval_seconds, job_gpus);
            if (history && (stats.samples == 1 || job_gpus.size() != gpus_before))
                history->set_machine(snap.host.cpu_count, snap.memory.total_bytes, run_gpus(snap, job_gpus));
            if (history) history->add_sample(to_run_sample(snap, job, job_gpus));
            if (snap.swap.oom_kill_total) {
                if (!oom_kills_at_start) oom_kills_at_start = snap.swap.oom_kill_total;
                oom_kills_now = snap.swap.oom_kill_total;
            }
            window.push_back(std::move(snap));
            const double oldest = seconds(window.back()) - o.thresholds.window_seconds;
            window.erase(window.begin(), std::find_if(window.begin(), window.end(),
                                                      [&](const Snapshot& x) { return seconds(x) >= oldest; }));
            steps.erase(steps.begin(), std::find_if(steps.begin(), steps.end(), [&](const StepSample& s) {
                            return s.t_ms >= window.front().time_unix_ms;
                        }));
            std::vector<Finding> found;  // about the job, the host, and the job's GPUs
            for (Finding& f : diagnose(window, o.thresholds, steps)) {
                attribute_to_job(f, job);
                const std::optional<unsigned> gpu = gpu_of_finding(f, window.back());
                if (!gpu || job_gpus.count(*gpu)) {
                    found.push_back(std::move(f));
                } else if (std::none_of(held.begin(), held.end(), [&](const auto& h) {
                               return h.second.rule == f.rule && h.second.subject == f.subject;
                           })) {
                    held.emplace_back(*gpu, std::move(f));
                }
            }
            for (auto it = held.begin(); it != held.end();) {
                if (job_gpus.count(it->first)) {
                    found.push_back(std::move(it->second));
                    it = held.erase(it);
                } else {
                    ++it;
                }
            }
            for (const Finding* f : merge_findings(stats, found)) {
                if (history) history->add_finding(window.back().time_unix_ms, *f);
                if (!o.quiet && f->severity != Severity::info)
                    pending.push_back(fmt::format("baton: {} {} [{}]: {}", severity_name(f->severity), f->rule,
                                                  f->subject, f->summary));
            }
        }
        // At most one new-finding line every 5 s on the command's terminal.
        if (!pending.empty() && now - last_note >= 5) {
            std::fprintf(stderr, "%s\n", printable(pending.front()).c_str());  // names from outside
            pending.pop_front();
            last_note = now;
        }
        sleep_seconds(std::min(0.02, std::max(0.0, schedule.next() - monotonic_seconds())));
    }
    stats.seconds = monotonic_seconds() - start;
    stats.exit_status = child.exit_status();
    stats.signal = child.terminating_signal();
    // What the command wrote last (a traceback) may still be in the pipe.
    if (child.stderr_fd() >= 0)
        for (int i = 0; i < 100 && pump(); ++i) sleep_seconds(0.002);
    take_scanner_findings();
    take_events();  // the last steps
    for (const auto& [pid, n] : dropped) stats.events_dropped += n;
    // The kernel's OOM killer acted during the run and the command died of SIGKILL.
    if (stats.signal == SIGKILL && oom_kills_at_start && oom_kills_now && *oom_kills_now > *oom_kills_at_start) {
        Finding f =
            make_finding("host_oom_kill", Severity::critical, "job",
                         fmt::format("the command died of SIGKILL while the kernel's OOM killer killed {} "
                                     "process(es)",
                                     *oom_kills_now - *oom_kills_at_start),
                         "Host memory ran out. Fewer DataLoader workers (each holds its own copy of an "
                         "in-memory dataset), smaller data types, or load the dataset once into shared memory.");
        const std::vector<Finding> one{f};  // merge_findings points into it: it must outlive the loop
        for (const Finding* x : merge_findings(stats, one))
            if (history) history->add_finding(unix_millis(), *x);
    }
    // Workers the command left behind (reparented to baton) end with it.
    stats.killed_after_grace += child.end_tree(std::min(o.grace_seconds, 2.0));
    for (const std::string& line : pending) std::fprintf(stderr, "%s\n", printable(line).c_str());
    std::stable_sort(stats.findings.begin(), stats.findings.end(),
                     [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
    if (history)
        stats.recording = history->finish(unix_millis(), stats.exit_status, [&](const RecordingReport& r) {
            stats.recording = r;
            return run_summary_text(stats);
        });
    return stats;
}

std::string run_summary_text(const RunStats& s) {
    std::string out;
    auto line = [&](const std::string& l) { out.append(l).push_back('\n'); };
    line(fmt::format(
        "baton run: {} {} after {:.1f} s ({} samples)", s.name,
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
            fmt::format("  steps (baton hook): {}, median {:.1f} ms p95 {:.1f} ms, data wait {:.0f} % of step time",
                        s.step_ms.size(), f.median_ms, f.p95_ms, f.wait_percent.value_or(0));
        if (f.samples_per_second)
            l += fmt::format(", {:.0f} samples/s{}", *f.samples_per_second,
                             s.ranks.size() > 1 ? fmt::format(" over {} ranks", s.ranks.size()) : std::string());
        if (s.events_dropped) l += fmt::format(", {} events lost (baton read too slowly)", s.events_dropped);
        line(l);
    }
    if (s.events_rejected) line(fmt::format("  {} malformed event(s) on the hook's socket ignored", s.events_rejected));
    if (s.killed_after_grace) line(fmt::format("  {} process(es) needed SIGKILL to end", s.killed_after_grace));
    if (s.recording_requested) line(recording_text(s));
    if (s.recording.longest_wait_seconds >= 1)
        line(fmt::format("  history writes waited up to {:.1f} s for the database{} (the command's output did not)",
                         s.recording.longest_wait_seconds,
                         s.recording.error.empty() ? std::string() : " (" + s.recording.error + ")"));
    if (s.findings.empty()) line("  findings: none");
    for (const Finding& f : s.findings) {
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
        const RecordingReport& r = s.recording;
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
        w.field("events_dropped", s.events_dropped);
        w.end_object();
    }
    w.field("killed_after_grace", s.killed_after_grace);
    w.key("findings");
    w.begin_array();
    for (const Finding& f : s.findings) write_finding_json(w, f);
    w.end_array();
    w.end_object();
    w.finish();
    out.push_back('\n');
    return out;
}

}  // namespace baton
