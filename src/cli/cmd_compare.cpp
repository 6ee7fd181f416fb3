#include "cli/cmd_compare.hpp"

#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "cli/cli_common.hpp"
#include "report/run_figures.hpp"
#include "store/history.hpp"

namespace baton::cli {

CLI::App* add_compare_command(CLI::App& app, CompareArgs& a) {
    CLI::App* cmd = app.add_subcommand("compare", "Two recorded runs side by side: what changed");
    cmd->add_option("run_a", a.a, "The first run's id")->required();
    cmd->add_option("run_b", a.b, "The second run's id")->required();
    cmd->add_option("--db", a.db,
                    "History database (default: [history] db in the config, else $XDG_STATE_HOME/baton/baton.db)");
    return cmd;
}

namespace {

std::string value(double v, const char* unit) {
    return v < 0 ? std::string("-") : fmt::format("{:.1f}{}", v, unit);
}

std::string delta(double a, double b, const char* unit) {
    if (a < 0 || b < 0) return "";
    const double d = b - a;
    if (std::abs(d) < 0.05) return "same";
    std::string s = fmt::format("{:+.1f}{}", d, unit);
    if (a >= 1) s += fmt::format(" ({:+.0f} %)", 100.0 * d / a);  // relative change only on a real base
    return s;
}

}  // namespace

int run_compare(const CompareArgs& a, const std::string& config_path) {
    Result<std::string> path = history_path(a.db, config_path);
    if (!path.ok()) return runtime_error(path.error().message);
    Result<History> h = History::open(*path, /*create=*/false);
    if (!h.ok()) return runtime_error(h.error().message);
    Result<std::vector<RunRecord>> runs = h->runs();
    if (!runs.ok()) return runtime_error(runs.error().message);
    auto find = [&](std::int64_t id) -> const RunRecord* {
        for (const RunRecord& r : *runs)
            if (r.id == id) return &r;
        return nullptr;
    };
    const RunRecord* ra = find(a.a);
    const RunRecord* rb = find(a.b);
    if (!ra || !rb) return runtime_error("no run " + std::to_string(ra ? a.b : a.a) + " in the history");
    RunFigures fa, fb;
    for (auto [r, f] : {std::pair{ra, &fa}, std::pair{rb, &fb}}) {
        Result<std::vector<RunSample>> s = h->samples(r->id);
        Result<std::vector<RecordedFinding>> found = h->findings(r->id);
        Result<std::vector<StepEvent>> steps = h->steps(r->id);
        if (!s.ok()) return runtime_error(s.error().message);
        *f = run_figures(*r, *s, found.ok() ? *found : std::vector<RecordedFinding>{},
                         steps.ok() ? *steps : std::vector<StepEvent>{});
    }
    std::string out;
    auto row = [&](const std::string& name, const std::string& x, const std::string& y, const std::string& d) {
        out += fmt::format("{:<22} {:>14} {:>14}   {}\n", name, x, y, d);
    };
    row("", fmt::format("run {}", ra->id), fmt::format("run {}", rb->id), "change");
    row("name", ra->name.substr(0, 14), rb->name.substr(0, 14), "");
    row("state / exit", ra->state + (ra->exit_status ? " " + std::to_string(*ra->exit_status) : ""),
        rb->state + (rb->exit_status ? " " + std::to_string(*rb->exit_status) : ""), "");
    row("duration", value(fa.seconds, " s"), value(fb.seconds, " s"), delta(fa.seconds, fb.seconds, " s"));
    row("GPU utilisation avg", value(fa.gpu_util_avg, " %"), value(fb.gpu_util_avg, " %"),
        delta(fa.gpu_util_avg, fb.gpu_util_avg, " pt"));
    row("GPU utilisation p95", value(fa.gpu_util_p95, " %"), value(fb.gpu_util_p95, " %"),
        delta(fa.gpu_util_p95, fb.gpu_util_p95, " pt"));
    row("GPU memory peak", value(fa.gpu_memory_peak_gib, " GiB"), value(fb.gpu_memory_peak_gib, " GiB"),
        delta(fa.gpu_memory_peak_gib, fb.gpu_memory_peak_gib, " GiB"));
    row("job CPU avg", value(fa.job_cpu_avg, " %"), value(fb.job_cpu_avg, " %"),
        delta(fa.job_cpu_avg, fb.job_cpu_avg, " pt"));
    row("job RSS peak", value(fa.job_rss_peak_gib, " GiB"), value(fb.job_rss_peak_gib, " GiB"),
        delta(fa.job_rss_peak_gib, fb.job_rss_peak_gib, " GiB"));
    row("host CPU avg", value(fa.host_cpu_avg, " %"), value(fb.host_cpu_avg, " %"),
        delta(fa.host_cpu_avg, fb.host_cpu_avg, " pt"));
    row("I/O wait avg", value(fa.iowait_avg, " %"), value(fb.iowait_avg, " %"),
        delta(fa.iowait_avg, fb.iowait_avg, " pt"));
    if (fa.steps || fb.steps) {  // the Python hook reported steps in at least one of them
        row("throughput", value(fa.samples_per_second, " /s"), value(fb.samples_per_second, " /s"),
            delta(fa.samples_per_second, fb.samples_per_second, " /s"));
        row("step time median", value(fa.step_ms_median, " ms"), value(fb.step_ms_median, " ms"),
            delta(fa.step_ms_median, fb.step_ms_median, " ms"));
        row("data wait", value(fa.data_wait_percent, " %"), value(fb.data_wait_percent, " %"),
            delta(fa.data_wait_percent, fb.data_wait_percent, " pt"));
    }
    for (const std::string& f : fa.findings)
        if (!fb.findings.count(f)) out += "gone in run " + std::to_string(rb->id) + ": " + f + "\n";
    for (const std::string& f : fb.findings)
        if (!fa.findings.count(f)) out += "new in run " + std::to_string(rb->id) + ": " + f + "\n";
    for (const std::string& f : fb.findings)
        if (fa.findings.count(f)) out += "in both: " + f + "\n";
    write_stdout(out);
    return kExitOk;
}

}  // namespace baton::cli
