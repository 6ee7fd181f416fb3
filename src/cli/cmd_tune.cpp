#include "cli/cmd_tune.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/allowed_cpus.hpp"
#include "core/clock.hpp"
#include "core/config.hpp"
#include "core/printable.hpp"
#include "run/run_command.hpp"
#include "store/history.hpp"
#include "store/history_tunings.hpp"
#include "tune/tune_report.hpp"
#include "tune/tuner.hpp"

namespace baton::cli {

CLI::App* add_tune_command(CLI::App& app, TuneArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "tune", "Try settings on your own training script and measure whether they help, beyond the noise");
    add_duration_option(cmd, "--budget", a.budget,
                        "The time the whole tuning may take, 10 s to 7 days (default 10m; kept within 10 %)", 10,
                        7 * 86400);
    cmd->add_option("--steps", a.steps, "Steps each trial measures after its warm-up, 5 to 100000 (default 30)")
        ->check(CLI::Range(std::int64_t{5}, std::int64_t{100000}));
    cmd->add_option("--allow", a.allow,
                    "Also try what changes the optimisation itself: batch-size (measured in samples/s then)")
        ->check(CLI::IsMember({"batch-size"}));
    cmd->add_flag("--json", a.json, "Print the result as one JSON object (docs/tune.md)");
    add_duration_option(cmd, "--interval", a.interval, "Time between samples, 0.1 s to 60 s (default 0.5)", 0.1, 60);
    add_duration_option(cmd, "--grace", a.grace,
                        "Time between SIGTERM and SIGKILL when a trial must be ended, 0 to 1h (default 10s)", 0, 3600);
    cmd->add_option("--name", a.name, "A name for the trials in the history (default: the command's name)");
    cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML");
    add_auto_hook_flag(cmd, a.no_auto_hook);
    cmd->add_option("--db", a.db,
                    "History database (default: [history] db in the config, else $XDG_STATE_HOME/baton/baton.db)");
    cmd->add_flag("--no-db", a.no_db, "Do not record the trials and the result (baton run --tuned then has none)");
    cmd->footer("Usage: baton tune [OPTIONS] -- CMD [ARGS...]");
    return cmd;
}

namespace {

std::string joined(const std::vector<std::string>& argv) {
    std::string out;
    for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
    return out;
}

}  // namespace

int run_tune(const TuneArgs& a, const std::vector<std::string>& command, const std::string& config_path) {
    std::vector<std::string> argv = command;
    if (!argv.empty() && argv.front() == "--") argv.erase(argv.begin());
    if (argv.empty()) return usage_error("tune: no command given (baton tune [OPTIONS] -- CMD [ARGS...])");
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    Result<SamplerOptions> sampler = sampler_options(*cfg, "", "", a.no_gpus);
    if (!sampler.ok()) return runtime_error(sampler.error().message);
    Result<std::string> work = make_private_temp_dir("baton-tune");  // the trials' logs, the hook's stop file
    if (!work.ok()) return runtime_error(work.error().message);
    apply_auto_hook_flag(a.no_auto_hook);

    tune::TuneOptions o;
    o.run.argv = argv;
    o.run.name = a.name.empty() ? run::command_name(argv) : a.name;
    o.run.interval_seconds = a.interval;
    o.run.grace_seconds = a.grace;
    o.run.sampler = *sampler;
    o.run.thresholds = cfg->thresholds;
    const std::string db = a.no_db ? "" : history_path(a.db, *cfg);
    o.run.db_path = db;
    o.budget_seconds = a.budget;
    o.steps = a.steps;
    o.allow_batch_size = !a.allow.empty();
    o.cpus = static_cast<unsigned>(allowed_cpus().size());
    o.work_dir = *work;
    o.say = [](const std::string& line) { std::fprintf(stderr, "%s\n", printable(line).c_str()); };
    const std::int64_t started_ms = unix_millis();
    Result<tune::TuneResult> r = tune::tune(o);
    auto keep_logs = [&](bool keep) {
        if (keep) {
            std::fprintf(stderr, "baton tune: the trials' output is in %s\n", printable(*work).c_str());
        } else {
            std::error_code ec;
            std::filesystem::remove_all(*work, ec);
        }
    };
    if (!r.ok()) {
        keep_logs(true);
        return runtime_error("tune: " + r.error().message);
    }
    bool failed_trial = false;
    for (const tune::TrialResult& t : r->trials) failed_trial = failed_trial || !t.counts();
    keep_logs(failed_trial);
    const std::string shown = joined(argv);
    if (!db.empty()) {
        store::TuningRecord rec;
        rec.t_ms = started_ms;
        rec.command = shown;
        rec.script = store::tuning_script_key(argv);
        char cwd[4096] = "";
        if (::getcwd(cwd, sizeof cwd)) rec.cwd = cwd;
        rec.measure = r->measure;
        rec.report = tune::tune_json(*r, shown);
        for (const tune::TrialResult& t : r->trials)
            if (t.setting == 0 && t.counts()) rec.baseline_run = t.run_id;
        if (r->winner) {
            rec.settings = tune::to_json(r->settings[*r->winner].settings);
            rec.label = tune::label(r->settings[*r->winner].settings);
            rec.gain = r->verdict.settings[*r->winner].gain;
            for (const tune::TrialResult& t : r->trials)
                if (t.setting == *r->winner && t.counts()) rec.winner_run = t.run_id;
        } else {
            rec.label = tune::label({});
        }
        Result<store::History> h = store::History::open(db);
        std::string failed = h.ok() ? "" : h.error().message;
        if (h.ok())
            if (Result<std::int64_t> id = h->tuning_table().add_tuning(rec); !id.ok()) failed = id.error().message;
        if (!failed.empty())
            std::fprintf(stderr, "baton tune: the result could not be kept for baton run --tuned: %s\n",
                         printable(failed).c_str());
    }
    const std::string text = a.json ? tune::tune_json(*r, shown) : tune::tune_text(*r, shown);
    std::fputs(a.json ? text.c_str() : printable_text(text).c_str(), stdout);
    return kExitOk;
}

}  // namespace baton::cli
