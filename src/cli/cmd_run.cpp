#include "cli/cmd_run.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/allowed_cpus.hpp"
#include "core/clock.hpp"
#include "core/config.hpp"
#include "core/printable.hpp"
#include "core/text_parse.hpp"
#include "report/profile_view.hpp"
#include "run/memory_capture.hpp"
#include "run/run_command.hpp"
#include "run/run_outputs.hpp"
#include "store/history.hpp"
#include "store/history_tunings.hpp"
#include "tune/live_control.hpp"
#include "tune/settings.hpp"

namespace baton::cli {

CLI::App* add_run_command(CLI::App& app, RunArgs& a) {
    CLI::App* cmd =
        app.add_subcommand("run", "Run a command and watch it: findings as they appear, a summary at the end");
    add_duration_option(cmd, "--interval", a.interval, "Time between samples, 0.1 s to 60 s (default 0.5)", 0.1, 60);
    add_duration_option(cmd, "--grace", a.grace,
                        "Time between a forwarded stop signal and SIGKILL, 0 to 1h (default 10s)", 0, 3600);
    cmd->add_option("--name", a.name, "A name for the run (default: the command's name)");
    cmd->add_flag("--quiet", a.quiet, "Keep findings for the summary instead of printing them as they appear");
    cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML");
    add_hang_options(cmd, a.hang_seconds, a.on_hang);
    cmd->add_option_function<std::string>(
           "--profile",
           [&a](const std::string& v) {
               a.profile = true;
               if (v.empty()) return;
               if (v == "auto") {
                   a.profile_auto = true;
                   return;
               }
               const std::optional<int> n = text::parse_digits<int>(v);
               if (!n || *n < 1 || *n > 1000)
                   throw CLI::ValidationError("--profile",
                                              "'" + v + "' is not a number of steps from 1 to 1000, nor auto");
               a.profile_steps = *n;
           },
           "Record a profiler window inside baton.torch.watch after [profile] warmup steps (10): --profile=STEPS "
           "steps (default [profile] steps, 5), judged at the end and kept with the run; --profile=auto: one "
           "window when gpu_underused, step_time_unstable or input_bound first fires (docs/profile.md)")
        ->expected(0, 1);
    cmd->add_option_function<std::string>(
           "--memory-history",
           [&a](const std::string& v) {
               a.memory_history = run::kDefaultHistoryEvents;
               if (v.empty()) return;
               const std::optional<std::int64_t> n = text::parse_digits<std::int64_t>(v);
               if (!n || *n < 1 || *n > 10'000'000)
                   throw CLI::ValidationError("--memory-history",
                                              "'" + v + "' is not a number of events from 1 to 10000000");
               a.memory_history = *n;
           },
           "Have PyTorch record the last allocation events with their Python stacks (PyTorch 2.0 or later, from the "
           "watched loop's start), so a CUDA out-of-memory error is explained by what allocated the memory: "
           "--memory-history=EVENTS keeps that many (default 10000; docs/memory.md)")
        ->expected(0, 1);
    add_auto_hook_flag(cmd, a.no_auto_hook);
    cmd->add_flag("--tuned", a.tuned,
                  "Apply the settings the last baton tune of this command found best, with no code change "
                  "(docs/tune.md)");
    cmd->add_flag("--tune-live", a.tune_live,
                  "While the step waits for data, raise the training DataLoader's workers (then its prefetch) at the "
                  "next epoch's start, keep each change that measurably helped and undo the one that did not, as "
                  "tf.data's AUTOTUNE does (docs/tune.md)");
    cmd->add_option("--db", a.db,
                    "History database (default: [history] db in the config, else $XDG_STATE_HOME/baton/baton.db)");
    cmd->add_flag("--no-db", a.no_db, "Do not record the run");
    cmd->add_option("--report", a.report, "At the end, write the run's HTML report (baton report) to FILE");
    cmd->add_option("--summary-json", a.summary_json,
                    "At the end, write the summary as one JSON object to FILE ('-': stdout)");
    // The command itself is cut off before CLI11 parses (split_run_command): its arguments are
    // never baton's.
    cmd->footer("Usage: baton run [OPTIONS] -- CMD [ARGS...]");
    return cmd;
}

std::size_t split_run_command(const CLI::App& app, const std::vector<std::string>& args) {
    // True when `word` is an option of `cmd` (or of the top level) that takes a separate value.
    auto takes_value = [&](const CLI::App* cmd, const std::string& word) {
        if (word.find('=') != std::string::npos) return false;
        for (const CLI::App* c : {cmd, &app}) {
            if (!c) continue;
            // Flags take none; an option whose value is optional (launch's --nccl-debug) takes one only as --opt=VALUE.
            if (const CLI::Option* o = c->get_option_no_throw(word)) return o->get_expected_min() > 0;
        }
        return false;
    };
    // `run` must be the subcommand: the first word that is not a global option.
    std::size_t i = 0;
    for (; i < args.size(); ++i) {
        if (args[i].rfind("-", 0) != 0) break;
        if (takes_value(nullptr, args[i])) ++i;
    }
    // `bench scaling ... -- CMD`: its options, and bench's own, may come before the command.
    const CLI::App* parent = nullptr;
    if (i + 1 < args.size() && args[i] == "bench") {
        std::size_t k = i + 1;  // bench's options may stand before "scaling"
        while (k < args.size() && args[k].rfind("-", 0) == 0)
            k += takes_value(app.get_subcommand("bench"), args[k]) ? 2 : 1;
        if (k >= args.size() || args[k] != "scaling") return args.size();
        parent = app.get_subcommand("bench");
        i = k;
    } else if (i < args.size() && args[i] == "edit") {
        // `edit JOB [OPTIONS] -- CMD`: its first word is the job, so only "--" starts the command.
        for (std::size_t k = i + 1; k < args.size(); ++k)
            if (args[k] == "--") return k;
        return args.size();
    } else if (i >= args.size() ||
               (args[i] != "run" && args[i] != "submit" && args[i] != "launch" && args[i] != "tune")) {
        return args.size();
    }
    const CLI::App* run = parent ? parent->get_subcommand(args[i]) : app.get_subcommand(args[i]);
    for (++i; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") return i;
        if (a.rfind("-", 0) != 0) return i;                                  // the command's first word
        if (takes_value(run, a) || (parent && takes_value(parent, a))) ++i;  // unknown options: the parser's to report
    }
    // (a value-taking option at the end leaves i past the end: no command)
    return args.size();
}

namespace {

// --tuned: the latest tuning of this command (or of its script) in this directory, applied through
// the environment the shim reads; said in one line.
Status apply_tuning(const std::string& db_path, const std::vector<std::string>& argv) {
    Result<store::History> h = store::History::open(db_path, store::HistoryAccess::read);
    if (!h.ok()) return h.error();
    std::string command;
    for (const std::string& w : argv) command += (command.empty() ? "" : " ") + w;
    char cwd[4096] = "";
    if (!::getcwd(cwd, sizeof cwd)) return make_error("cannot tell the current directory");
    Result<std::optional<store::TuningRecord>> t =
        h->tuning_table().latest_tuning(command, store::tuning_script_key(argv), cwd);
    if (!t.ok()) return t.error();
    if (!*t)
        return make_error("--tuned: no baton tune of this command in " + std::string(cwd) + " in " + db_path +
                          " (baton tune -- " + command + " first)");
    Result<tune::Settings> s = tune::settings_from_json((*t)->settings);
    if (!s.ok()) return make_error("--tuned: the saved settings cannot be read: " + s.error().message);
    if (s->empty()) {
        std::fprintf(stderr,
                     "baton: --tuned: the last baton tune of this command found nothing better than its own "
                     "settings; it runs as it is\n");
        return Ok{};
    }
    const char* conf = std::getenv("PYTORCH_CUDA_ALLOC_CONF");
    for (const auto& [k, v] : tune::settings_environment(*s, conf ? std::optional<std::string>(conf) : std::nullopt))
        ::setenv(k.c_str(), v.c_str(), 1);
    std::fprintf(stderr, "baton: --tuned: %s (%s, %+.1f %% %s in its tuning of %s)\n",
                 printable(tune::label(*s)).c_str(), printable((*t)->command).c_str(), 100 * (*t)->gain.value_or(0),
                 (*t)->measure.c_str(), local_time_text((*t)->t_ms, "%Y-%m-%d %H:%M").c_str());
    return Ok{};
}

}  // namespace

int run_run(const RunArgs& a, const std::vector<std::string>& command, const std::string& config_path) {
    std::vector<std::string> argv = command;
    if (!argv.empty() && argv.front() == "--") argv.erase(argv.begin());
    if (argv.empty()) return usage_error("run: no command given (baton run [OPTIONS] -- CMD [ARGS...])");
    if (!a.report.empty() && a.no_db) return usage_error("run: --report is made from the run's history; drop --no-db");
    if (a.tuned && a.no_db) return usage_error("run: --tuned reads the tuning from the history; drop --no-db");
    if (a.tuned && a.no_auto_hook)
        return usage_error("run: --tuned applies its settings through the automatic hook; drop --no-auto-hook");
    if (a.tune_live && a.no_auto_hook)
        return usage_error("run: --tune-live moves the workers through the automatic hook; drop --no-auto-hook");
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    run::RunOptions o;
    o.argv = argv;
    o.name = a.name;
    o.interval_seconds = a.interval;
    o.grace_seconds = a.grace;
    o.quiet = a.quiet;
    Result<SamplerOptions> sampler = sampler_options(*cfg, "", "", a.no_gpus);
    if (!sampler.ok()) return runtime_error(sampler.error().message);
    o.sampler = *sampler;
    o.thresholds = cfg->thresholds;
    if (!a.no_db) o.db_path = history_path(a.db, *cfg);
    o.hang.hang_seconds = a.hang_seconds >= 0 ? a.hang_seconds : cfg->launch.hang_seconds;
    o.stop_on_hang = (a.on_hang.empty() ? cfg->launch.on_hang : a.on_hang) == "stop";
    o.profile.enabled = a.profile;
    o.profile.automatic = a.profile_auto;
    o.profile.warmup = cfg->profile.warmup;
    o.profile.steps = a.profile_steps ? a.profile_steps : cfg->profile.steps;
    o.profile.rules.min_share = cfg->profile.min_share;
    o.profile.rules.cpus = static_cast<unsigned>(allowed_cpus().size());
    o.profile.rules.data_wait_share = cfg->thresholds.data_wait_percent / 100;
    o.profile.rules.data_wait_warning_share = cfg->thresholds.data_wait_warning_percent / 100;
    o.memory_history = a.memory_history;
    apply_auto_hook_flag(a.no_auto_hook);
    if (a.tuned)
        if (Status st = apply_tuning(o.db_path, argv); !st.ok()) return runtime_error("run: " + st.error().message);
    // --tune-live: the hook reads what to apply from a file in a private directory of this run.
    std::shared_ptr<tune::LiveTuner> live;
    std::string live_dir;
    if (a.tune_live) {
        Result<std::string> dir = make_private_temp_dir("baton-live");
        if (!dir.ok()) return runtime_error("run: --tune-live: " + dir.error().message);
        live_dir = *dir;
        live = std::make_shared<tune::LiveTuner>(static_cast<unsigned>(allowed_cpus().size()));
        o.live = tune::live_control(live_dir + "/control.json", live);
    }
    Result<run::RunStats> stats = run::run_command(o);
    if (!live_dir.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(live_dir, ec);
    }
    if (!stats.ok()) return start_failure(stats.error());
    std::string summary = stats->hang_root_cause + "\n";
    if (stats->profile) {  // the window's breakdown, then the summary (whose findings include the window's)
        report::ProfileInfo info;
        info.source = "the window of " + stats->name;
        info.top = 5;
        report::append_profile_text(info, *stats->profile, stats->profile_findings, summary);
    }
    if (!stats->profile_note.empty()) summary += stats->profile_note + "\n";
    if (!stats->memory_note.empty()) summary += stats->memory_note + "\n";
    summary += run::run_summary_text(*stats);
    if (live) {
        summary += live->history().empty() ? "  tuned live: no change (the step did not wait for data long enough to "
                                             "move the workers, or the run ended first)\n"
                                           : "  tuned live:\n";
        for (const std::string& l : live->history()) summary += "    " + l + "\n";
    }
    summary += run::write_run_outputs(*stats, o.db_path, a.report, a.summary_json, "run");
    std::fputs(printable_text(summary).c_str(), stderr);
    return stats->exit_status;
}

}  // namespace baton::cli
