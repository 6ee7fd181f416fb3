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
    Result<History> h = open_history(a.db, config_path);
    if (!h.ok()) return runtime_error(h.error().message);
    Result<StoredRun> da = h->load_run(a.a);
    if (!da.ok()) return runtime_error(da.error().message);
    Result<StoredRun> db = h->load_run(a.b);
    if (!db.ok()) return runtime_error(db.error().message);
    const RunRecord& ra = da->run;
    const RunRecord& rb = db->run;
    const RunFigures fa = run_figures(ra, da->samples, da->findings, da->steps);
    const RunFigures fb = run_figures(rb, db->samples, db->findings, db->steps);
    std::string out;
    auto row = [&](const std::string& name, const std::string& x, const std::string& y, const std::string& d) {
        out += fmt::format("{:<22} {:>14} {:>14}   {}\n", name, x, y, d);
    };
    // A figure of both runs, with the change; `change_unit` is " pt" for percentages.
    auto figure = [&](const std::string& name, double RunFigures::*field, const char* unit, const char* change_unit) {
        row(name, value(fa.*field, unit), value(fb.*field, unit), delta(fa.*field, fb.*field, change_unit));
    };
    row("", fmt::format("run {}", ra.id), fmt::format("run {}", rb.id), "change");
    row("name", ra.name.substr(0, 14), rb.name.substr(0, 14), "");
    row("state / exit", ra.state + (ra.exit_status ? " " + std::to_string(*ra.exit_status) : ""),
        rb.state + (rb.exit_status ? " " + std::to_string(*rb.exit_status) : ""), "");
    figure("duration", &RunFigures::seconds, " s", " s");
    figure("GPU utilisation avg", &RunFigures::gpu_util_avg, " %", " pt");
    figure("GPU utilisation p95", &RunFigures::gpu_util_p95, " %", " pt");
    figure("GPU memory peak", &RunFigures::gpu_memory_peak_gib, " GiB", " GiB");
    figure("job CPU avg", &RunFigures::job_cpu_avg, " %", " pt");
    figure("job RSS peak", &RunFigures::job_rss_peak_gib, " GiB", " GiB");
    figure("host CPU avg", &RunFigures::host_cpu_avg, " %", " pt");
    figure("I/O wait avg", &RunFigures::iowait_avg, " %", " pt");
    if (fa.steps || fb.steps) {  // the Python hook reported steps in at least one of them
        figure("throughput", &RunFigures::samples_per_second, " /s", " /s");
        figure("step time median", &RunFigures::step_ms_median, " ms", " ms");
        figure("data wait", &RunFigures::data_wait_percent, " %", " pt");
    }
    for (const std::string& f : fa.findings)
        if (!fb.findings.count(f)) out += "gone in run " + std::to_string(rb.id) + ": " + f + "\n";
    for (const std::string& f : fb.findings)
        if (!fa.findings.count(f)) out += "new in run " + std::to_string(rb.id) + ": " + f + "\n";
    for (const std::string& f : fb.findings)
        if (fa.findings.count(f)) out += "in both: " + f + "\n";
    write_stdout(out);
    return kExitOk;
}

}  // namespace baton::cli
