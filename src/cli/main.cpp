// baton's entry point: global flags, subcommand dispatch, and the one-line error contract
// (bad flags or values: "baton: error: ..." on stderr, exit code 2).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "cli/cli_docs.hpp"
#include "cli/cmd_bench.hpp"
#include "cli/cmd_clean.hpp"
#include "cli/cmd_compare.hpp"
#include "cli/cmd_diagnose.hpp"
#include "cli/cmd_doctor.hpp"
#include "cli/cmd_explain.hpp"
#include "cli/cmd_jobstats.hpp"
#include "cli/cmd_usage.hpp"
#include "cli/cmd_queue.hpp"
#include "cli/cmd_report.hpp"
#include "cli/cmd_launch.hpp"
#include "cli/cmd_run.hpp"
#include "cli/cmd_runs.hpp"
#include "cli/cmd_serve.hpp"
#include "cli/cmd_snapshot.hpp"
#include "cli/cmd_profile.hpp"
#include "cli/cmd_stacks.hpp"
#include "cli/cmd_top.hpp"
#include "cli/cmd_tune.hpp"
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
    // (looked up by name: a queue client defines only the queue's commands, and get_subcommand throws)
    const std::vector<const CLI::App*> diagnose =
        app.get_subcommands([](const CLI::App* c) { return c->get_name() == "diagnose"; });
    const bool judging = (!diagnose.empty() && diagnose.front()->parsed()) ||
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

using baton::write_stdout;
using baton::cli::kExitOk;
using Words = std::vector<std::string>;

// One subcommand: whether it was given, and what runs it (with the command words split off before
// parsing, as `baton run -- CMD` has them, and the --config path).
struct Command {
    std::function<bool()> given;
    std::function<int(const Words&, const std::string&)> run;
};

// A subcommand whose flags fill an `Args` of its own: `add` defines them, `run` runs it.
template <typename Args, typename Add, typename Run>
Command command(CLI::App& app, Add add, Run run) {
    auto args = std::make_shared<Args>();
    CLI::App* cmd = add(app, *args);
    return {[cmd] { return cmd->parsed(); },
            [args, run](const Words& words, const std::string& config) { return run(*args, words, config); }};
}

// For the subcommands that take no command words.
template <typename Run>
auto config_only(Run run) {
    return [run](const auto& args, const Words&, const std::string& config) { return run(args, config); };
}

int unknown_command(const std::string& topic, const std::vector<std::string>& names) {
    const std::string near = baton::cli::closest(topic, names);
    return baton::cli::usage_error("unknown command '" + topic + "'" +
                                   (near.empty() ? " (baton help lists them)" : " (did you mean '" + near + "'?)"));
}

// completion, man and help: about baton itself, so they read `app` (which outlives them).
std::vector<Command> add_about_commands(CLI::App& app) {
    using namespace baton::cli;
    auto shell = std::make_shared<std::string>();
    CLI::App* completion = app.add_subcommand("completion", "Print a shell completion script: bash, zsh or fish");
    completion->add_option("shell", *shell, "bash, zsh or fish")
        ->required()
        ->check(CLI::IsMember({"bash", "zsh", "fish"}));
    completion->footer(
        "bash: baton completion bash > ~/.local/share/bash-completion/completions/baton\n"
        "zsh:  baton completion zsh > \"${fpath[1]}/_baton\"\n"
        "fish: baton completion fish > ~/.config/fish/completions/baton.fish");
    auto man_topic = std::make_shared<std::string>();
    auto man_list = std::make_shared<bool>(false);
    CLI::App* man = app.add_subcommand("man", "Print the manual page of baton or of one command (roff: man -l -)");
    man->add_option("command", *man_topic, "The command (default: baton itself)");
    man->add_flag("--list", *man_list, "List the commands that have a page, one per line (for packaging)");
    auto help_topic = std::make_shared<std::string>();
    CLI::App* help = app.add_subcommand("help", "Show help for baton or one subcommand");
    help->add_option("subcommand", *help_topic, "Subcommand to describe");

    Command c{[completion] { return completion->parsed(); },
              [&app, shell](const Words&, const std::string&) {
                  return write_stdout(completion_script(app, *shell)) ? kExitOk : kExitFailure;
              }};
    Command m{[man] { return man->parsed(); },
              [&app, man_topic, man_list](const Words&, const std::string&) {
                  std::string out;
                  if (*man_list) {
                      for (const std::string& name : man_page_commands(app)) out += name + "\n";
                  } else {
                      out = man_page(app, *man_topic, BATON_VERSION_LINE);
                      if (out.empty()) return unknown_command(*man_topic, man_page_commands(app));
                  }
                  return write_stdout(out) ? kExitOk : kExitFailure;
              }};
    Command h{[help] { return help->parsed(); },
              [&app, help_topic](const Words&, const std::string&) {
                  if (help_topic->empty()) {
                      std::fputs(top_help(app).c_str(), stdout);
                      return kExitOk;
                  }
                  std::vector<std::string> names;
                  for (CLI::App* sub : app.get_subcommands({})) {
                      if (sub->get_name() == *help_topic) {
                          std::fputs(sub->help("baton").c_str(), stdout);
                          return kExitOk;
                      }
                      names.push_back(sub->get_name());
                  }
                  return unknown_command(*help_topic, names);
              }};
    return {c, m, h};
}

// The queue's commands share one set of flags (submit, queue, show, ...).
Command add_queue_group(CLI::App& app) {
    using namespace baton::cli;
    auto queue_args = std::make_shared<QueueArgs>();
    auto queue = std::make_shared<QueueCommands>(add_queue_commands(app, *queue_args));
    return {[queue] { return queue->parsed() != nullptr; },
            [queue, queue_args](const Words& words, const std::string& config) {
                return run_queue_command(*queue, *queue_args, words, config);
            }};
}

// Every subcommand, once, in the order `baton help` lists them.
std::vector<Command> add_commands(CLI::App& app) {
    using namespace baton::cli;
    std::vector<Command> all = {
        command<SnapshotArgs>(app, add_snapshot_command, config_only(run_snapshot)),
        command<TopArgs>(app, add_top_command, config_only(run_top)),
        command<DiagnoseArgs>(app, add_diagnose_command, config_only(run_diagnose)),
        command<DoctorArgs>(app, add_doctor_command, config_only(run_doctor)),
        command<RunArgs>(app, add_run_command, run_run),
        command<LaunchArgs>(app, add_launch_command, run_launch_command),
        command<TuneArgs>(app, add_tune_command, run_tune),
        command<StacksArgs>(app, add_stacks_command, config_only(run_stacks)),
        command<ProfileArgs>(app, add_profile_command, config_only(run_profile)),
        command<CleanArgs>(app, add_clean_command, config_only(run_clean)),
        command<BenchArgs>(app, add_bench_command, run_bench),
        command<RunsArgs>(app, add_runs_command, config_only(run_runs)),
        command<CompareArgs>(app, add_compare_command, config_only(run_compare)),
        command<ReportArgs>(app, add_report_command, config_only(run_report)),
        command<ServeArgs>(app, add_serve_command, config_only(run_serve)),
        command<JobstatsArgs>(app, add_jobstats_command, config_only(run_jobstats)),
        command<UsageArgs>(app, add_usage_command, config_only(run_usage)),
        command<ExplainArgs>(app, add_explain_command,
                             [](const ExplainArgs& a, const Words&, const std::string&) { return run_explain(a); }),
    };
    all.push_back(add_queue_group(app));
    for (Command& c : add_about_commands(app)) all.push_back(std::move(c));
    return all;
}

// True when the words name one of the queue's commands with nothing but --config before it: only
// those are then defined. A queue is driven by scripts that call `baton submit` thousands of times,
// and defining every command's flags first is most of a client's start-up (the heap it touches).
// Anything else (--help or --version first, another command, none) defines them all, so help and
// "did you mean" see every command.
bool queue_command_only(const Words& words) {
    std::size_t i = 0;
    while (i < words.size() && words[i].rfind("--config", 0) == 0) i += words[i] == "--config" ? 2 : 1;
    return i < words.size() && baton::cli::is_queue_command(words[i]);
}

// Parses the flags; an exit status when that is all there is to do (help, version, bad usage).
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
    using namespace baton::cli;
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
        if (e.get_exit_code() != 0) return usage_failure(app, one_line(e.what()), argc, argv);
        // A subcommand's --help arrives here as a ParseError with exit code 0.
        const std::vector<CLI::App*> given = app.get_subcommands();
        std::fputs((given.empty() ? app.help() : given.front()->help()).c_str(), stdout);
        return kExitOk;
    }
    return std::nullopt;
}

int run_main(int argc, char** argv) {
    // What every command this baton starts inherits (baton run's command, launch's workers, the
    // agent's jobs): the Python hook says so once when its version is not this one.
    ::setenv("BATON_VERSION", BATON_VERSION, 1);
    CLI::App app{"baton: see, judge and tune a deep-learning training machine", "baton"};
    app.set_version_flag("--version", BATON_VERSION_LINE);
    std::string config_path;
    app.add_option("--config", config_path,
                   "Config file read after /etc/baton/baton.toml and ~/.config/baton/baton.toml (or $BATON_CONFIG)");
    app.require_subcommand(0, 1);
    // Options a subcommand does not know fall through to its parent, so global options work
    // after the subcommand too (`baton snapshot --config x.toml`); subcommands inherit this.
    app.fallthrough();
    const Words words(argv + 1, argv + argc);
    const std::vector<Command> commands =
        queue_command_only(words) ? std::vector<Command>{add_queue_group(app)} : add_commands(app);

    // `baton run ... -- CMD ARGS` (and `baton submit`): the command's words never reach the option parser.
    const std::size_t command_at = baton::cli::split_run_command(app, words);
    const Words command_words(words.begin() + static_cast<std::ptrdiff_t>(command_at), words.end());
    if (std::optional<int> done = parse(app, static_cast<int>(command_at) + 1, argv)) return *done;
    for (const Command& c : commands)
        if (c.given()) return c.run(command_words, config_path);
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
