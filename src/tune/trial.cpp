#include "tune/trial.hpp"

#include <cstdio>
#include <limits>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)
#include <nlohmann/json.hpp>

#include "core/files.hpp"

namespace baton::tune {

namespace {

using json = nlohmann::json;

std::optional<json> object_of(const std::string& body) {
    json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    return j;
}

std::optional<std::int64_t> whole(const json& j, const char* key, std::int64_t lo, std::int64_t hi) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return std::nullopt;
    const std::int64_t v = it->get<std::int64_t>();
    if (v < lo || v > hi) return std::nullopt;
    return v;
}

bool flag(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() && it->get<bool>();
}

// The last non-empty line of the trial's log: what a crash said last.
std::string last_line(const std::string& path) {
    std::optional<std::string> text = read_small_file(path, 1 << 20);
    if (!text) return "";
    std::size_t end = text->find_last_not_of(" \n\r\t");
    if (end == std::string::npos) return "";
    std::size_t begin = text->rfind('\n', end);
    begin = begin == std::string::npos ? 0 : begin + 1;
    std::string line = text->substr(begin, end + 1 - begin);
    return line.size() > 200 ? line.substr(0, 197) + "..." : line;
}

}  // namespace

std::optional<LoaderFacts> loader_facts_of(const std::string& body) {
    std::optional<json> j = object_of(body);
    if (!j) return std::nullopt;
    std::optional<std::int64_t> workers = whole(*j, "num_workers", 0, 4096);
    if (!workers) return std::nullopt;
    LoaderFacts f;
    f.num_workers = static_cast<int>(*workers);
    f.pin_memory = flag(*j, "pin_memory");
    f.persistent_workers = flag(*j, "persistent_workers");
    if (auto v = whole(*j, "prefetch_factor", 1, 1 << 20)) f.prefetch_factor = static_cast<int>(*v);
    if (auto v = whole(*j, "batch_size", 1, 1 << 30)) f.batch_size = static_cast<int>(*v);
    if (auto v = whole(*j, "batches", 0, INT64_MAX)) f.batches = *v;
    return f;
}

std::optional<ProcessFacts> process_facts_of(const std::string& body) {
    std::optional<json> j = object_of(body);
    if (!j) return std::nullopt;
    std::optional<std::int64_t> threads = whole(*j, "threads", 1, 1 << 20);
    if (!threads) return std::nullopt;
    ProcessFacts f;
    f.torch_threads = static_cast<int>(*threads);
    f.cuda = flag(*j, "cuda");
    f.cudnn_benchmark = flag(*j, "cudnn_benchmark");
    f.tf32 = flag(*j, "tf32");
    if (auto v = whole(*j, "compute_major", 0, 100)) f.compute_major = static_cast<int>(*v);
    return f;
}

std::optional<std::vector<double>> losses_of(const std::string& body) {
    std::optional<json> j = object_of(body);
    if (!j) return std::nullopt;
    auto it = j->find("values");
    if (it == j->end() || !it->is_array()) return std::nullopt;
    std::vector<double> out;
    for (const json& v : *it) {
        if (v.is_number())
            out.push_back(v.get<double>());
        else if (v.is_null())
            out.push_back(std::numeric_limits<double>::quiet_NaN());  // a NaN loss, as JSON has none
        else
            return std::nullopt;
    }
    return out;
}

TrialResult run_trial(const TrialOptions& o) {
    TrialResult r;
    const int log = ::open(o.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log < 0) {
        r.end = TrialEnd::not_started;
        r.why = "cannot write " + o.log_path;
        return r;
    }
    ::unlink(o.stop_file.c_str());
    std::optional<int> rank;  // the rank whose steps count
    run::TrialControl t;
    t.output_fd = log;
    t.stop_file = o.stop_file;
    t.deadline_seconds = o.deadline_seconds;
    t.environment = settings_environment(o.settings, [] {
        const char* v = std::getenv("PYTORCH_CUDA_ALLOC_CONF");
        return v ? std::optional<std::string>(v) : std::nullopt;
    }());
    t.environment.emplace_back("BATON_TRIAL_STOP", o.stop_file);
    if (o.record_losses) t.environment.emplace_back("BATON_TRIAL_LOSSES", "1");
    t.on_event = [&](const store::HookEvent& e) {
        if (e.type == "step") {
            if (!rank || e.step.rank < *rank) {
                if (rank && e.step.rank < *rank) r.steps.clear();  // a lower rank came late: its steps count
                rank = e.step.rank;
            }
            if (e.step.rank == *rank) r.steps.push_back({e.step.step_ms, e.step.wait_ms, e.step.samples});
        } else if (e.type == "loader" && !r.loader) {
            r.loader = loader_facts_of(e.body);
        } else if (e.type == "process" && !r.process) {
            r.process = process_facts_of(e.body);
        } else if (e.type == "losses") {
            if (auto v = losses_of(e.body)) r.losses = std::move(*v);
        }
    };
    const std::size_t wanted = static_cast<std::size_t>(std::max<std::int64_t>(1, o.steps));
    t.enough = [&] {
        r.warmup = find_warmup(r.steps);
        return r.warmup && r.steps.size() >= r.warmup->first + wanted;
    };
    run::RunOptions ro = o.run;
    ro.quiet = true;
    ro.trial = std::move(t);
    Result<run::RunStats> stats = run::run_command(ro);
    ::close(log);
    ::unlink(o.stop_file.c_str());
    if (!stats.ok()) {
        r.end = TrialEnd::not_started;
        r.why = stats.error().message;
        return r;
    }
    const run::RunStats& s = *stats;
    r.seconds = s.seconds;
    r.energy = s.energy;
    for (const diagnose::Finding& f : s.findings)
        if (f.severity != diagnose::Severity::info) r.findings.push_back(f);
    r.run_id = s.recording.run_id;
    if (s.samples) r.cpu_percent = s.job_cpu_sum / static_cast<double>(s.samples);
    double util = 0, sm = 0;
    std::size_t util_n = 0, sm_n = 0;
    for (const run::GpuRunStats& g : s.gpus) {
        for (double u : g.utilization) util += u;
        util_n += g.utilization.size();
        sm += g.sm_activity_sum;
        sm_n += g.sm_activity_samples;
        r.gpu_memory_peak = std::max(r.gpu_memory_peak, g.peak_memory_bytes);
        r.gpu_memory_total = std::max(r.gpu_memory_total, g.memory_total_bytes);
    }
    if (util_n) r.gpu_utilization = util / static_cast<double>(util_n);
    if (sm_n) r.sm_activity = sm / static_cast<double>(sm_n);
    r.warmup = s.trial_stopped ? find_warmup(r.steps) : warmup_at_end(r.steps);
    if (r.warmup) r.measure = measure(r.steps, r.warmup->first, wanted);
    const bool failed = s.exit_status != 0 && !(s.trial_stopped && s.exit_status == 0);
    if (s.deadline_passed) {
        r.end = TrialEnd::deadline;
        r.why = fmt::format("ran past its deadline of {:.0f} s with {} step(s) and was ended with its processes",
                            o.deadline_seconds, r.steps.size());
    } else if (s.trial_stopped && s.exit_status == 0 && r.measure.steps >= wanted) {
        r.end = TrialEnd::measured;
    } else if (failed) {
        r.end = TrialEnd::crashed;
        const std::string last = last_line(o.log_path);
        r.why = (s.signal ? fmt::format("was killed by signal {}", s.signal)
                          : fmt::format("exited with {}", s.exit_status)) +
                fmt::format(" after {} step(s)", r.steps.size()) + (last.empty() ? "" : ": " + last);
    } else if (r.measure.steps >= 3) {
        r.end = TrialEnd::short_script;
        r.why = fmt::format("the script ended after {} step(s): {} measured{}", r.steps.size(), r.measure.steps,
                            r.warmup && !r.warmup->settled ? " before its step times settled" : "");
    } else {
        r.end = TrialEnd::no_steps;
        r.why = r.steps.empty() ? "no step was measured (no optimizer step: docs/python.md)"
                                : fmt::format("the script ended after {} step(s), too few to measure", r.steps.size());
    }
    return r;
}

}  // namespace baton::tune
