#include "run/job_watch.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/text_parse.hpp"
#include "core/units.hpp"
#include "diagnose/host_load.hpp"
#include "diagnose/process_trees.hpp"
#include "diagnose/rules.hpp"
#include "run/memory_capture.hpp"
#include "sample/gpu/throttle_reasons.hpp"
#include "sample/process_lookup.hpp"
#include "store/hook_event.hpp"

namespace baton::run {

namespace {

// The allocator's figures kept per training process: the last this many steps.
constexpr std::size_t kKeptSteps = 2000;

// The command and all its descendants in one snapshot, summed (walked once per tick: the summary
// and the history both use it).
struct JobTotals {
    double cpu_percent = 0;
    std::uint64_t rss_bytes = 0;
    std::size_t processes = 0;
    std::set<std::uint32_t> pids;  // in baton's pid namespace
};

JobTotals job_totals(const Snapshot& snap, const std::vector<pid_t>& roots) {
    JobTotals j;
    const std::vector<std::uint32_t> pids(roots.begin(), roots.end());
    for (const ProcessInfo* p : diagnose::process_trees(snap, pids)) {
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
std::optional<unsigned> gpu_of_finding(const diagnose::Finding& f, const Snapshot& snap) {
    unsigned n = 0;
    if (std::sscanf(f.subject.c_str(), "gpu:%u", &n) == 1) return n;
    if (std::sscanf(f.subject.c_str(), "pid:%u", &n) == 1)
        for (const GpuInfo& g : snap.gpus)
            for (const GpuProcess& p : g.processes)
                if (p.local_pid == n) return g.index;
    return std::nullopt;
}

// For a finding about one MIG device ("gpu:0/mig:3"): whether one of the job's processes runs on it
// now. Another slice of the same GPU is another user's, not the job's. None for other subjects.
std::optional<bool> job_on_mig_device(const diagnose::Finding& f, const Snapshot& snap, const JobTotals& job) {
    unsigned index = 0, instance = 0;
    if (std::sscanf(f.subject.c_str(), "gpu:%u/mig:%u", &index, &instance) != 2) return std::nullopt;
    for (const GpuInfo& g : snap.gpus)
        if (g.index == index)
            for (const GpuProcess& p : g.processes)
                if (p.gpu_instance_id == instance && p.local_pid && job.pids.count(*p.local_pid)) return true;
    return false;
}

// A finding about one of the job's own processes is about "job": the same subject in every run
// (pids change), so compare can match it, and one finding for all the job's ranks.
void attribute_to_job(diagnose::Finding& f, const JobTotals& job) {
    unsigned pid = 0;
    if (std::sscanf(f.subject.c_str(), "pid:%u", &pid) == 1 && job.pids.count(pid)) f.subject = "job";
}

// How much of a host-wide load the run's job made over the window (docs/findings.md, "Whose load"):
// said in the summary and kept as evidence, so that baton compare does not present another
// process's load as the run's effect.
void weigh_the_jobs_share(diagnose::Finding& f, const diagnose::Window& w, const std::vector<pid_t>& roots) {
    const std::optional<diagnose::LoadKind> kind = diagnose::load_kind_of_rule(f.rule);
    if (f.subject != "host" || !kind) return;
    std::set<std::uint32_t> pids;  // the job's processes at any point of the window
    for (const Snapshot& s : w) {
        const std::set<std::uint32_t> now = job_totals(s, roots).pids;
        pids.insert(now.begin(), now.end());
    }
    const std::optional<double> share = diagnose::share_of_load(diagnose::load_by_process(w, *kind), pids);
    if (!share) return;
    if (*share >= diagnose::kMainCausePercent) {
        f.summary += fmt::format("; the run's job makes {:.0f} % of it", *share);
    } else {
        f.summary += fmt::format("; the run's job makes only {:.0f} % of it: not its main cause", *share);
        f.recommendation =
            "Most of this load is other processes' (named above), not the run's: ask their owners, or "
            "run where the machine is yours (baton queue). " +
            f.recommendation;
    }
    diagnose::Evidence e;
    e.metric = diagnose::kJobShareMetric;
    e.average = e.minimum = e.maximum = *share;
    e.threshold = fmt::format("< {:g}: not the job's doing", diagnose::kMainCausePercent);
    e.samples = w.size();
    f.evidence.push_back(e);
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
store::RunSample to_run_sample(const Snapshot& snap, const JobTotals& job, const std::set<unsigned>& job_gpus) {
    store::RunSample r;
    r.t_ms = snap.time_unix_ms;
    r.cpu_percent = snap.cpu.total.utilization_percent.value_or(0);
    r.iowait_percent = snap.cpu.total.iowait_percent.value_or(0);
    r.memory_used_bytes = static_cast<double>(snap.memory.used_bytes);
    r.swap_bytes_per_second = snap.swap.in_bytes_per_second.value_or(0) + snap.swap.out_bytes_per_second.value_or(0);
    r.job_cpu_percent = job.cpu_percent;
    r.job_rss_bytes = static_cast<double>(job.rss_bytes);
    double read = 0, write = 0;
    for (const DiskStats& d : snap.disks) {
        if (!counts_as_storage(d)) continue;  // dm, md, loop, zram: their bytes are counted below them
        read += d.read_bytes_per_second.value_or(0);
        write += d.write_bytes_per_second.value_or(0);
    }
    r.disk_read_bytes_per_second = read;
    r.disk_write_bytes_per_second = write;
    for (const GpuInfo& g : snap.gpus) {
        if (g.stale || g.error || !job_gpus.count(g.index)) continue;
        store::RunSample::Gpu x;
        x.index = static_cast<std::uint8_t>(g.index);
        x.utilization_percent = g.utilization_percent.value_or(0);
        x.memory_used_bytes = static_cast<double>(g.memory_used_bytes.value_or(0));
        x.sm_activity_percent = g.sm_activity_percent;
        x.power_watts = g.power_watts;
        x.temperature_celsius = g.temperature_celsius;
        x.sm_clock_mhz = g.sm_clock_mhz;
        if (g.throttle_reasons) x.throttle_reasons = throttle_reason_bits(*g.throttle_reasons);
        r.gpus.push_back(x);
    }
    return r;
}

void account_step(RunStats& s, const store::StepEvent& e) {
    s.step_ms_sum += e.step_ms;
    s.wait_ms_sum += e.wait_ms;
    if (e.samples) {
        s.step_samples += *e.samples;
        s.step_samples_ms += e.step_ms;
    }
    s.step_ms.push_back(static_cast<float>(e.step_ms));
    s.ranks.insert(e.rank);
}

// Every GPU with its processes as NVML reports them, the job's marked, for an out-of-memory autopsy.
std::vector<std::pair<std::string, gpu_memory::GpuAtFailure>> gpu_view(const Snapshot& snap, const JobTotals& job) {
    std::vector<std::pair<std::string, gpu_memory::GpuAtFailure>> out;
    for (const GpuInfo& g : snap.gpus) {
        if (g.stale || g.error) continue;
        gpu_memory::GpuAtFailure v;
        v.index = g.index;
        v.name = g.name;
        v.total_bytes = g.memory_total_bytes;
        for (const GpuProcess& p : g.processes) {
            if (!p.used_memory_bytes) continue;
            gpu_memory::GpuOccupant o;
            o.pid = p.our_pid();  // as the job's processes and `baton top` know it (NVML's is the host's)
            o.bytes = *p.used_memory_bytes;
            o.job = job.pids.count(p.our_pid()) > 0;
            if (const ProcessInfo* x = find_process(snap, p.our_pid())) {
                o.name = x->name;
                o.user = x->user;
            }
            v.processes.push_back(std::move(o));
        }
        out.emplace_back(g.uuid, std::move(v));
    }
    return out;
}

std::vector<store::RunGpu> run_gpus(const Snapshot& snap, const std::set<unsigned>& job_gpus) {
    std::vector<store::RunGpu> out;
    for (const GpuInfo& g : snap.gpus)
        if (job_gpus.count(g.index)) out.push_back({g.index, g.uuid, g.name, g.memory_total_bytes.value_or(0)});
    return out;
}

}  // namespace

JobWatchOptions local_job_options(const std::string& name, const std::vector<std::string>& argv,
                                  const Thresholds& thresholds, const std::string& db_path,
                                  const store::HistoryWriter::Options& recording) {
    JobWatchOptions wo;
    wo.name = name.empty() ? command_name(argv) : name;
    wo.argv = argv;
    char cwd[4096] = "";
    if (getcwd(cwd, sizeof cwd)) wo.cwd = cwd;
    wo.thresholds = thresholds;
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) wo.cuda_visible_devices = v;
    wo.db_path = db_path;
    wo.recording = recording;
    return wo;
}

void push_to_window(diagnose::Window& window, Snapshot snap, double window_seconds) {
    window.push_back(std::move(snap));
    const double oldest = diagnose::seconds(window.back()) - window_seconds;
    window.erase(window.begin(), std::find_if(window.begin(), window.end(),
                                              [&](const Snapshot& x) { return diagnose::seconds(x) >= oldest; }));
}

std::string finding_note(const diagnose::Finding& f) {
    return fmt::format("baton: {} {} [{}]: {}", diagnose::severity_name(f.severity), f.rule, f.subject, f.summary);
}

JobWatch::JobWatch(JobWatchOptions options, pid_t root) : JobWatch(std::move(options), std::vector<pid_t>{root}) {}

JobWatch::JobWatch(JobWatchOptions options, std::vector<pid_t> roots)
    : options_(std::move(options)), roots_(std::move(roots)) {
    stats_.argv = options_.argv;
    stats_.name = options_.name;
    stats_.cuda_visible_devices = options_.cuda_visible_devices;
    // The history, written on its own thread (store/history_writer.hpp): a job that cannot be
    // recorded still runs, and the database never holds the job's output back.
    if (!options_.db_path.empty()) {
        store::RunHeader header;
        header.name = stats_.name;
        for (const std::string& a : options_.argv) header.command += (header.command.empty() ? "" : " ") + a;
        header.cwd = options_.cwd;
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        header.host = host;
        header.start_ms = unix_millis();
        history_.emplace(options_.db_path, std::move(header), options_.recording);
        stats_.recording_requested = true;
    }
}

std::vector<diagnose::Finding> JobWatch::merge(const std::vector<diagnose::Finding>& found) {
    std::vector<diagnose::Finding> fresh;
    for (const diagnose::Finding& f : found) {
        auto it = std::find_if(stats_.findings.begin(), stats_.findings.end(),
                               [&](const diagnose::Finding& x) { return x.rule == f.rule && x.subject == f.subject; });
        if (it == stats_.findings.end()) {
            stats_.findings.push_back(f);
            fresh.push_back(f);
        } else if (f.severity > it->severity) {  // the first sighting's evidence, unless it grew worse
            *it = f;
        }
    }
    return fresh;
}

void JobWatch::add_finding(const diagnose::Finding& f) {
    merge({f});
    if (history_) history_->add_finding(unix_millis(), f);
}

void JobWatch::record_hang(const std::string& rule, const std::string& text) {
    if (history_) history_->add_hang(unix_millis(), rule, text);
}

double JobWatch::median_step_seconds() {
    // Taken again when the steps grew by a tenth: a run of millions of steps is not sorted each second.
    const std::size_t n = stats_.step_ms.size();
    if (n != median_of_steps_ && (n < 100 || n >= median_of_steps_ + median_of_steps_ / 10)) {
        std::vector<float> v = stats_.step_ms;
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
        median_step_ = n ? v[n / 2] / 1000.0 : 0;
        median_of_steps_ = n;
    }
    return median_step_;
}

std::vector<diagnose::Finding> JobWatch::read_output(std::string_view bytes) {
    if (!bytes.empty()) scanner_.feed(bytes);
    std::vector<diagnose::Finding> news;
    const auto& f = scanner_.findings();
    bool oom_said = false;
    for (; scanned_ < f.size(); ++scanned_)
        for (diagnose::Finding& x : merge({f[scanned_].rule == "cuda_oom" ? explained_oom() : f[scanned_]})) {
            if (history_) history_->add_finding(unix_millis(), x);
            oom_said |= x.rule == "cuda_oom";
            news.push_back(std::move(x));
        }
    // The message's numbers came after a line that only named the error: explained again with them.
    if (scanner_.oom_line() != explained_line_) {
        explained_line_ = scanner_.oom_line();
        if (!oom_said)
            for (diagnose::Finding& x : stats_.findings)
                if (x.rule == "cuda_oom") {
                    x = explained_oom();
                    if (history_) history_->replace_finding(unix_millis(), x);
                }
    }
    return news;
}

std::optional<gpu_memory::GpuAtFailure> JobWatch::gpu_of_cuda_device(unsigned device) const {
    // CUDA numbers the devices it is shown; baton's jobs see them in PCI bus order, as NVML does.
    std::optional<unsigned> index = device;
    std::string uuid;
    if (options_.cuda_visible_devices) {
        index.reset();
        std::string_view list = *options_.cuda_visible_devices;
        for (unsigned i = 0; !list.empty(); ++i) {
            const std::size_t comma = list.find(',');
            const std::string_view item = list.substr(0, comma);
            if (i == device) {
                if (const auto n = text::parse_digits<unsigned>(item))
                    index = *n;
                else
                    uuid = std::string(item);
                break;
            }
            list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        }
    }
    for (const auto& [id, view] : gpu_view_)
        if ((index && view.index == *index) || (!uuid.empty() && id.rfind(uuid, 0) == 0)) return view;
    return std::nullopt;
}

void JobWatch::take_oom_event(const store::HookEvent& e) {
    if (options_.memory_dir.empty() || oom_capture_) return;  // none asked, or the first failure is kept
    Result<TakenCapture> t = take_oom_capture(options_.memory_dir, e.path);
    if (!t.ok()) {
        stats_.memory_note = "baton: " + t.error().message;
        return;
    }
    if (history_) history_->add_oom_capture({e.step.t_ms, e.step.rank, e.step.pid, std::move(t->json)});
    oom_capture_ = std::move(t->capture);
    for (diagnose::Finding& f : stats_.findings)
        if (f.rule == "cuda_oom") {  // said before the capture came: the better explanation replaces it
            f = explained_oom();
            if (history_) history_->replace_finding(e.step.t_ms, f);
        }
}

std::optional<gpu_memory::GpuAtFailure> JobWatch::gpu_of_process(std::uint32_t pid) const {
    for (const auto& [uuid, view] : gpu_view_)
        for (const gpu_memory::GpuOccupant& p : view.processes)
            if (p.job && p.pid == pid) return view;
    return std::nullopt;
}

std::vector<diagnose::Finding> JobWatch::judge_allocations() const {
    std::vector<diagnose::Finding> out;
    for (const auto& [pid, p] : allocations_) {
        gpu_memory::StepMemoryContext where;
        if (const std::optional<gpu_memory::GpuAtFailure> g = gpu_of_process(pid)) {
            where.gpu = fmt::format("GPU{}", g->index);
            where.capacity = g->total_bytes;
            for (const gpu_memory::GpuOccupant& o : g->processes)
                if (!o.job) where.others_bytes += o.bytes;
        } else {
            where.gpu = fmt::format("cuda:{}", p.device);
        }
        if (!where.capacity && p.total) where.capacity = p.total;
        const std::vector<gpu_memory::StepAllocation> steps(p.steps.begin(), p.steps.end());
        for (diagnose::Finding& f : gpu_memory::judge_step_memory(steps, where, options_.thresholds))
            out.push_back(std::move(f));
    }
    return out;
}

diagnose::Finding JobWatch::explained_oom() const {
    gpu_memory::OomInputs in;
    std::string line = scanner_.oom_line();
    if (line.empty() && oom_capture_) line = oom_capture_->message;
    if (!line.empty()) in.message = gpu_memory::parse_oom_message(line);
    if (oom_capture_) in.capture = &*oom_capture_;
    const std::optional<unsigned> device = in.message && in.message->gpu ? in.message->gpu
                                           : oom_capture_                ? std::optional<unsigned>(oom_capture_->device)
                                                                         : std::nullopt;
    // The failing GPU: where the process that captured the failure holds memory (whatever each rank's
    // CUDA_VISIBLE_DEVICES), else the message's device as the job's CUDA_VISIBLE_DEVICES maps it.
    if (oom_capture_) in.gpu = gpu_of_process(oom_capture_->pid);
    if (!in.gpu && device) in.gpu = gpu_of_cuda_device(*device);
    if (!in.gpu && !device && gpu_view_.size() == 1) in.gpu = gpu_view_.front().second;
    // The steps of the process that failed, else those that peaked highest: what they kept (the last
    // step's end) and their highest peak with its batch.
    const auto memory_of = [](const ProcessSteps& p) {
        gpu_memory::StepMemory m;
        m.held_bytes = p.steps.back().held;
        m.held_first = p.steps[std::min<std::size_t>(2, p.steps.size() - 1)].held;
        for (const gpu_memory::StepAllocation& s : p.steps)
            if (s.peak >= m.peak_bytes) {
                m.peak_bytes = s.peak;
                m.batch_size = s.samples;
            }
        m.steps = static_cast<std::int64_t>(p.steps.size());
        m.model = gpu_memory::batch_memory_model({p.steps.begin(), p.steps.end()});
        return m;
    };
    if (oom_capture_)
        if (auto it = allocations_.find(oom_capture_->pid); it != allocations_.end()) in.steps = memory_of(it->second);
    if (!in.steps)
        for (const auto& [pid, p] : allocations_)
            if (const gpu_memory::StepMemory m = memory_of(p); !in.steps || m.peak_bytes > in.steps->peak_bytes)
                in.steps = m;
    return gpu_memory::oom_finding(gpu_memory::explain_oom(in), line);
}

std::vector<diagnose::Finding> JobWatch::take_profile_event(const store::HookEvent& e) {
    if (options_.profile_dir.empty()) return {};  // none asked: not the hook's window
    Result<TakenProfile> t = take_profile(options_.profile_dir, e.path, options_.profile);
    if (!t.ok()) {
        stats_.profile_note = "baton: the profile window's trace could not be read: " + t.error().message;
        return {};
    }
    if (history_) history_->add_profile({e.step.t_ms, e.step.rank, e.profile_steps, std::move(t->trace_gz)});
    std::vector<diagnose::Finding> news;
    for (diagnose::Finding& x : merge(t->findings)) {
        if (history_) history_->add_finding(e.step.t_ms, x);
        news.push_back(std::move(x));
    }
    stats_.profile = std::move(t->analysis);
    stats_.profile_findings = std::move(t->findings);
    stats_.profile_note.clear();
    return news;
}

std::vector<diagnose::Finding> JobWatch::read_events(const std::vector<std::string>& datagrams) {
    std::vector<diagnose::Finding> news;
    std::vector<store::StepEvent> fresh;
    for (const std::string& datagram : datagrams) {
        Result<store::HookEvent> e = store::parse_hook_event(datagram);
        if (!e.ok()) {
            ++stats_.events_rejected;
            continue;
        }
        dropped_[e->step.pid] = std::max(dropped_[e->step.pid], e->dropped);
        if (options_.on_event) options_.on_event(*e);
        if (e->finding) {  // from baton.torch.check(), which printed it already
            for (diagnose::Finding& x : merge({*e->finding}))
                if (history_) history_->add_finding(e->step.t_ms, std::move(x));
            continue;
        }
        if (e->type == "profile") {
            for (diagnose::Finding& x : take_profile_event(*e)) news.push_back(std::move(x));
            continue;
        }
        if (e->type == "oom") {
            take_oom_event(*e);
            continue;
        }
        if (e->type == "hook") {
            stats_.torch_hooked = true;
            continue;
        }
        if (e->type != "step") continue;
        account_step(stats_, e->step);
        (e->automatic ? stats_.steps_automatic : stats_.steps_from_script) = true;
        if (e->cuda) {
            ProcessSteps& p = allocations_[e->step.pid];
            p.device = e->cuda->device;
            p.total = e->cuda->total;
            // What the step left allocated is what the steps keep (the model, its state).
            p.steps.push_back({e->step.step, e->step.samples.value_or(0), e->cuda->allocated, e->cuda->peak_allocated});
            if (p.steps.size() > kKeptSteps) p.steps.pop_front();
        }
        last_step_ms_ = std::max(last_step_ms_, e->step.t_ms);
        if (!first_step_ms_) first_step_ms_ = e->step.t_ms;
        steps_.push_back({e->step.t_ms, e->step.pid, e->step.rank, e->step.step_ms, e->step.wait_ms, e->step.samples});
        fresh.push_back(std::move(e->step));
    }
    if (history_ && !fresh.empty()) history_->add_steps(std::move(fresh));
    return news;
}

std::vector<diagnose::Finding> JobWatch::sample(const diagnose::Window& window) {
    if (window.empty()) return {};
    const Snapshot& snap = window.back();
    const JobTotals job = job_totals(snap, roots_);
    const std::size_t gpus_before = job_gpus_.size();
    note_job_gpus(snap, job, job_gpus_);
    if (!snap.gpus.empty()) gpu_view_ = gpu_view(snap, job);
    account(stats_, snap, job, snap.interval_seconds, job_gpus_);
    std::vector<std::pair<unsigned, double>> counters;  // the job's GPUs' energy
    for (const GpuInfo& g : snap.gpus)
        if (job_gpus_.count(g.index) && g.energy_joules_total) counters.emplace_back(g.index, *g.energy_joules_total);
    energy_.add(snap.time_unix_ms, counters, snap.cpu.package_energy_joules_total);
    if (history_ && (stats_.samples == 1 || job_gpus_.size() != gpus_before))
        history_->set_machine(snap.host.cpu_count, snap.memory.total_bytes, run_gpus(snap, job_gpus_));
    if (history_) history_->add_sample(to_run_sample(snap, job, job_gpus_));
    if (snap.swap.oom_kill_total) {
        if (!oom_kills_at_start_) oom_kills_at_start_ = snap.swap.oom_kill_total;
        oom_kills_now_ = snap.swap.oom_kill_total;
    }
    steps_.erase(steps_.begin(), std::find_if(steps_.begin(), steps_.end(), [&](const diagnose::StepSample& s) {
                     return s.t_ms >= window.front().time_unix_ms;
                 }));
    std::vector<diagnose::Finding> found;  // about the job, the host, and the job's GPUs
    for (diagnose::Finding& f : diagnose::diagnose(window, options_.thresholds, steps_)) {
        attribute_to_job(f, job);
        weigh_the_jobs_share(f, window, roots_);
        // A MIG device's finding is the job's while it runs there; it comes again while it holds.
        if (const std::optional<bool> mine = job_on_mig_device(f, snap, job)) {
            if (*mine) found.push_back(std::move(f));
            continue;
        }
        const std::optional<unsigned> gpu = gpu_of_finding(f, snap);
        if (!gpu || job_gpus_.count(*gpu)) {
            found.push_back(std::move(f));
        } else if (std::none_of(held_.begin(), held_.end(), [&](const auto& h) {
                       return h.second.rule == f.rule && h.second.subject == f.subject;
                   })) {
            held_.emplace_back(*gpu, std::move(f));
        }
    }
    for (auto it = held_.begin(); it != held_.end();) {
        if (job_gpus_.count(it->first)) {
            found.push_back(std::move(it->second));
            it = held_.erase(it);
        } else {
            ++it;
        }
    }
    for (diagnose::Finding& f : judge_allocations()) found.push_back(std::move(f));
    std::vector<diagnose::Finding> fresh = merge(found);
    if (history_)
        for (const diagnose::Finding& f : fresh) history_->add_finding(snap.time_unix_ms, f);
    return fresh;
}

RunStats JobWatch::finish(int exit_status, int signal, double seconds, int killed_after_grace) {
    stats_.exit_status = exit_status;
    stats_.signal = signal;
    stats_.seconds = seconds;
    stats_.killed_after_grace = killed_after_grace;
    for (const auto& [pid, n] : dropped_) stats_.events_dropped += n;
    // The allocator's figures judged once more with every step in (a short run may end between samples).
    for (diagnose::Finding& x : merge(judge_allocations()))
        if (history_) history_->add_finding(unix_millis(), std::move(x));
    // The hook captured an OOM that never reached stderr (the script printed its errors elsewhere) and
    // the job failed: the capture alone says it.
    if (oom_capture_ && (exit_status != 0 || signal != 0) &&
        std::none_of(stats_.findings.begin(), stats_.findings.end(),
                     [](const diagnose::Finding& f) { return f.rule == "cuda_oom"; }))
        for (diagnose::Finding& x : merge({explained_oom()}))
            if (history_) history_->add_finding(unix_millis(), std::move(x));
    if (cgroup_oom_kills_ > 0) {
        // The job's own cgroup says so: its memory limit was hit.
        const std::string limit = cgroup_limit_bytes_ ? "its --mem " + format_size(cgroup_limit_bytes_) : "its memory";
        diagnose::Finding f = diagnose::make_finding(
            "host_oom_kill", diagnose::Severity::critical, "job",
            fmt::format("the job ran out of {}: the kernel's OOM killer killed {} process(es) of its cgroup", limit,
                        cgroup_oom_kills_),
            "Ask for more (--mem), or use less: fewer DataLoader workers (each holds its own copy of an in-memory "
            "dataset), smaller data types, or load the dataset once into shared memory.");
        diagnose::Evidence e;
        e.metric = "cgroup.memory_events_oom_kill";
        e.average = e.minimum = e.maximum = static_cast<double>(cgroup_oom_kills_);
        if (cgroup_limit_bytes_) e.threshold = "memory.max " + format_size(cgroup_limit_bytes_);
        e.samples = 1;
        f.evidence.push_back(e);
        for (diagnose::Finding& x : merge({f}))
            if (history_) history_->add_finding(unix_millis(), std::move(x));
    } else if (signal == SIGKILL && oom_kills_at_start_ && oom_kills_now_ && *oom_kills_now_ > *oom_kills_at_start_) {
        // The kernel's OOM killer acted during the run and the job died of SIGKILL.
        diagnose::Finding f = diagnose::make_finding(
            "host_oom_kill", diagnose::Severity::critical, "job",
            fmt::format("the command died of SIGKILL while the kernel's OOM killer killed {} "
                        "process(es)",
                        *oom_kills_now_ - *oom_kills_at_start_),
            "Host memory ran out. Fewer DataLoader workers (each holds its own copy of an "
            "in-memory dataset), smaller data types, or load the dataset once into shared memory.");
        for (diagnose::Finding& x : merge({f}))
            if (history_) history_->add_finding(unix_millis(), std::move(x));
    }
    std::stable_sort(stats_.findings.begin(), stats_.findings.end(),
                     [](const diagnose::Finding& a, const diagnose::Finding& b) { return a.severity > b.severity; });
    // Per step over the steps' span: each rank's first step ends where the span begins, so it is not in it.
    const double n = static_cast<double>(stats_.step_ms.size());
    const double ranks = static_cast<double>(std::max<std::size_t>(1, stats_.ranks.size()));
    std::optional<double> span_samples;
    if (stats_.step_samples > 0 && n > 0) span_samples = static_cast<double>(stats_.step_samples) * (n - ranks) / n;
    stats_.energy = energy_.figures(first_step_ms_, last_step_ms_, (n - ranks) / ranks, span_samples);
    if (history_)
        stats_.recording = history_->finish(
            unix_millis(), stats_.exit_status,
            [&](const store::RecordingReport& r) {
                stats_.recording = r;
                return run_summary_text(stats_);
            },
            30, store::to_json(stats_.energy));
    history_.reset();
    return stats_;
}

}  // namespace baton::run
