// baton's entry point: global flags, subcommand dispatch, and the one-line error contract
// (bad flags or values: "baton: error: ..." on stderr, exit code 2).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "cli/cli_docs.hpp"
#include "cli/cmd_bench.hpp"
#include "cli/cmd_clean.hpp"
#include "cli/cmd_compare.hpp"
#include "cli/cmd_diagnose.hpp"
#include "cli/cmd_doctor.hpp"
#include "cli/cmd_explain.hpp"
#include "cli/cmd_queue.hpp"
#include "cli/cmd_report.hpp"
#include "cli/cmd_launch.hpp"
#include "cli/cmd_run.hpp"
#include "cli/cmd_runs.hpp"
#include "cli/cmd_serve.hpp"
#include "cli/cmd_snapshot.hpp"
#include "cli/cmd_top.hpp"
#include "cli/usage_hints.hpp"
#include "sample/gpu/gpu_backend.hpp"

#include "baton_git_commit.hpp"  // generated at build time: BATON_GIT_COMMIT

#ifndef BATON_VERSION
#define BATON_VERSION "0.0.0-dev"
#endif
// "baton 0.1.0 (commit 53c4104a1b2c)": the version and the commit it was built from.
#define BATON_VERSION_LINE "baton " BATON_VERSION " (commit " BATON_GIT_COMMIT ")"

namespace {

// CLI11 messages can span lines; the contract is one line.
std::string one_line(std::string s) {
    for (char& c : s)
        if (c == '\n') c = ' ';
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
}

// Reports bad usage: exit 2, except for baton diagnose, whose 2 means a critical finding and
// which reports "could not judge" as 3.
int usage_failure(const CLI::App& app, const std::string& message, int argc, char** argv) {
    using namespace baton::cli;
    const bool judging = app.get_subcommand("diagnose")->parsed() ||
                         std::any_of(argv + 1, argv + argc, [](const char* a) { return std::string(a) == "diagnose"; });
    usage_error(message);
    return judging ? kExitCannotJudge : kExitUsage;
}

}  // namespace

// The top-level help, even when a subcommand (like `help`) was selected: App::help()
// would describe the selected subcommand instead.
std::string top_help(const CLI::App& app) {
    return app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
}

namespace {

int run_main(int argc, char** argv) {
    using namespace baton::cli;
    CLI::App app{"baton: see, judge and tune a deep-learning training machine", "baton"};
    app.set_version_flag("--version", BATON_VERSION_LINE);
    std::string config_path;
    app.add_option("--config", config_path,
                   "Config file read after /etc/baton/baton.toml and ~/.config/baton/baton.toml (or $BATON_CONFIG)");
    app.require_subcommand(0, 1);
    // Options a subcommand does not know fall through to its parent, so global options work
    // after the subcommand too (`baton snapshot --config x.toml`); subcommands inherit this.
    app.fallthrough();

    SnapshotArgs snapshot_args;
    CLI::App* snapshot = add_snapshot_command(app, snapshot_args);
    TopArgs top_args;
    CLI::App* top = add_top_command(app, top_args);
    DiagnoseArgs diagnose_args;
    CLI::App* diagnose = add_diagnose_command(app, diagnose_args);
    DoctorArgs doctor_args;
    CLI::App* doctor = add_doctor_command(app, doctor_args);
    RunArgs run_args;
    CLI::App* run = add_run_command(app, run_args);
    LaunchArgs launch_args;
    CLI::App* launch = add_launch_command(app, launch_args);
    CleanArgs clean_args;
    CLI::App* clean = add_clean_command(app, clean_args);
    BenchArgs bench_args;
    CLI::App* bench = add_bench_command(app, bench_args);
    RunsArgs runs_args;
    CLI::App* runs = add_runs_command(app, runs_args);
    CompareArgs compare_args;
    CLI::App* compare = add_compare_command(app, compare_args);
    ReportArgs report_args;
    CLI::App* report = add_report_command(app, report_args);
    ServeArgs serve_args;
    CLI::App* serve = add_serve_command(app, serve_args);
    ExplainArgs explain_args;
    CLI::App* explain = add_explain_command(app, explain_args);
    QueueArgs queue_args;
    const QueueCommands queue_commands = add_queue_commands(app, queue_args);

    std::string shell;
    CLI::App* completion = app.add_subcommand("completion", "Print a shell completion script: bash, zsh or fish");
    completion->add_option("shell", shell, "bash, zsh or fish")
        ->required()
        ->check(CLI::IsMember({"bash", "zsh", "fish"}));
    completion->footer(
        "bash: baton completion bash > ~/.local/share/bash-completion/completions/baton\n"
        "zsh:  baton completion zsh > \"${fpath[1]}/_baton\"\n"
        "fish: baton completion fish > ~/.config/fish/completions/baton.fish");
    std::string man_topic;
    bool man_list = false;
    CLI::App* man = app.add_subcommand("man", "Print the manual page of baton or of one command (roff: man -l -)");
    man->add_option("command", man_topic, "The command (default: baton itself)");
    man->add_flag("--list", man_list, "List the commands that have a page, one per line (for packaging)");

    std::string help_topic;
    CLI::App* help = app.add_subcommand("help", "Show help for baton or one subcommand");
    help->add_option("subcommand", help_topic, "Subcommand to describe");

    // `baton run ... -- CMD ARGS` (and `baton submit`): the command's words never reach the option parser.
    const std::vector<std::string> words(argv + 1, argv + argc);
    const std::size_t command_at = split_run_command(app, words);
    const std::vector<std::string> run_command_words(words.begin() + static_cast<std::ptrdiff_t>(command_at),
                                                     words.end());
    argc = static_cast<int>(command_at) + 1;

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), stdout);
        return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
        std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
        return kExitOk;
    } catch (const CLI::CallForVersion&) {
        std::printf("%s\n", BATON_VERSION_LINE);
        return kExitOk;
    } catch (const CLI::ExtrasError&) {
        return usage_failure(app, unexpected_words_message(app), argc, argv);
    } catch (const CLI::ParseError& e) {
        // A subcommand's --help arrives here as a ParseError with exit code 0.
        if (e.get_exit_code() == 0) {
            for (CLI::App* sub : app.get_subcommands()) {
                std::fputs(sub->help().c_str(), stdout);
                return kExitOk;
            }
            std::fputs(app.help().c_str(), stdout);
            return kExitOk;
        }
        return usage_failure(app, one_line(e.what()), argc, argv);
    }

    if (snapshot->parsed()) return run_snapshot(snapshot_args, config_path);
    if (top->parsed()) return run_top(top_args, config_path);
    if (serve->parsed()) return run_serve(serve_args, config_path);
    if (diagnose->parsed()) return run_diagnose(diagnose_args, config_path);
    if (doctor->parsed()) return run_doctor(doctor_args, config_path);
    if (run->parsed()) return run_run(run_args, run_command_words, config_path);
    if (launch->parsed()) return run_launch_command(launch_args, run_command_words, config_path);
    if (clean->parsed()) return run_clean(clean_args, config_path);
    if (bench->parsed()) return run_bench(bench_args, run_command_words, config_path);
    if (runs->parsed()) return run_runs(runs_args, config_path);
    if (compare->parsed()) return run_compare(compare_args, config_path);
    if (report->parsed()) return run_report(report_args, config_path);
    if (explain->parsed()) return run_explain(explain_args);
    if (queue_commands.parsed()) return run_queue_command(queue_commands, queue_args, run_command_words, config_path);
    if (completion->parsed()) return write_stdout(completion_script(app, shell)) ? kExitOk : kExitFailure;
    if (man->parsed() && man_list) {
        std::string out;
        for (const std::string& c : man_page_commands(app)) out += c + "\n";
        return write_stdout(out) ? kExitOk : kExitFailure;
    }
    if (man->parsed()) {
        const std::string page = man_page(app, man_topic, BATON_VERSION_LINE);
        if (page.empty()) {
            const std::string near = closest(man_topic, man_page_commands(app));
            return usage_error("unknown command '" + man_topic + "'" +
                               (near.empty() ? " (baton help lists them)" : " (did you mean '" + near + "'?)"));
        }
        return write_stdout(page) ? kExitOk : kExitFailure;
    }
    if (help->parsed()) {
        if (help_topic.empty()) {
            std::fputs(top_help(app).c_str(), stdout);
            return kExitOk;
        }
        std::vector<std::string> names;
        for (CLI::App* sub : app.get_subcommands({})) {
            if (sub->get_name() == help_topic) {
                std::fputs(sub->help("baton").c_str(), stdout);
                return kExitOk;
            }
            names.push_back(sub->get_name());
        }
        const std::string near = closest(help_topic, names);
        return usage_error("unknown command '" + help_topic + "'" +
                           (near.empty() ? " (baton help lists them)" : " (did you mean '" + near + "'?)"));
    }
    std::fputs(top_help(app).c_str(), stdout);
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    const int rc = run_main(argc, argv);
    // A GPU worker left inside a hung driver or a dlopen that never returned: exit() would wait
    // for the loader's lock or run the library's destructors under it. Flush, and end at once.
    if (baton::gpu_worker_abandoned()) {
        std::fflush(nullptr);
        std::_Exit(rc);
    }
    return rc;
}
