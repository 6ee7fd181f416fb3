// What every subcommand shares: the exit-code convention and flag error reporting.
#pragma once

#include <map>
#include <string>

#include "core/config.hpp"
#include "core/files.hpp"  // write_stdout, write_file: what every command prints and writes
#include "sample/sampler.hpp"
#include "store/history.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace baton::cli {

// Exit codes: 0 success, 1 a runtime failure (e.g. unreadable config), 2 bad usage.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
// The commands that ask the agent (the queue's, usage) add one (docs/queue.md, "Exit status"): 1
// is the agent's refusal, 3 no agent to ask (none answers, it went away, it did not answer in time).
inline constexpr int kExitNoAgent = 3;

// An error from asking the agent: printed as runtime_error() does; kExitNoAgent when no agent
// answered, else kExitFailure (it refused: no such job, not yours, not in a state for it, ...).
int agent_error(const Error& error);

// Prints "baton: error: MESSAGE" on one line to stderr and returns kExitUsage.
int usage_error(const std::string& message);

// Prints "baton: MESSAGE" on one line to stderr and returns kExitFailure.
int runtime_error(const std::string& message);

// The port of an agent named without one (`--hosts gpu3`): [serve] listen's, else baton serve's default.
int agent_port(const Config& c);

// Prints the error as usage_error() when its code is invalid_argument (a flag the user can fix),
// else as runtime_error(); returns the matching exit code.
int error_exit(const Error& error);

// For a command that could not be started: prints the error as runtime_error() does and returns
// what a shell would: 127 when it was not found, 126 when it could not be executed, else 1.
int start_failure(const Error& error);

// Adds an option that takes a duration in any form parse_duration() reads ("90", "0.5",
// "1m30s", "5min", "2h", "30d"), stores it as seconds and keeps it within [min, max] seconds.
// Every flag that takes a time uses this, so they all accept the same words.
// --hang-seconds and --on-hang, the hang verdict's options of baton run and baton launch (-1 and "":
// not given, the config's [launch] keys then).
void add_hang_options(CLI::App* cmd, double& hang_seconds, std::string& on_hang);

// A new private directory $TMPDIR/PREFIX-XXXXXX (/tmp without TMPDIR), mode 0700: --tune-live's control
// file, baton tune's trial logs. Errors name where.
Result<std::string> make_private_temp_dir(const std::string& prefix);

// --no-auto-hook (baton run, launch, submit, tune): the command's Python processes get no automatic
// step hook; sets `no_auto_hook`.
void add_auto_hook_flag(CLI::App* cmd, bool& no_auto_hook);
// With --no-auto-hook, `env` (the command's environment) says so to the shim.
void apply_auto_hook_flag(bool no_auto_hook, std::map<std::string, std::string>& env);
// The same for the commands that start it from this process's own environment.
void apply_auto_hook_flag(bool no_auto_hook);

CLI::Option* add_duration_option(CLI::App* cmd, const std::string& name, double& seconds, const std::string& help,
                                 double min, double max);

// The sampler's options from the config, with the flags every sampling command shares
// (--proc-root, --sys-root, --no-gpus) applied over it. An error when the proc root cannot be
// read as one (a mistyped --proc-root must not look like an empty, healthy machine).
Result<SamplerOptions> sampler_options(const Config& c, const std::string& proc_root, const std::string& sys_root,
                                       bool no_gpus);

// This process's environment as NAME -> value (the queue's client sends it with a job; both ends
// look up where the agent's socket is in it).
std::map<std::string, std::string> environment_variables();

// The run history database: --db when given, else [history] db from the config layers (read
// from `config_path` and the default files), else the default state path.
Result<std::string> history_path(const std::string& db_flag, const std::string& config_path);
// The same from a config already read.
std::string history_path(const std::string& db_flag, const Config& config);
// `name` beside the history database of the config layers (History::beside): where baton keeps
// its other state. The default state directory when the config cannot be read.
std::string state_file(const std::string& name, const std::string& config_path);
// That database opened for reading (runs, report, compare; read-only) or for `runs prune`
// (manage): never created at a mistyped path.
Result<store::History> open_history(const std::string& db_flag, const std::string& config_path,
                                    store::HistoryAccess access = store::HistoryAccess::read);

// A recorded run named on the command line (`baton stacks RUN`, `baton profile show RUN`): its id
// parsed (a malformed one is invalid_argument: a usage error), the history opened for reading, the
// run's record read; `what` names it for messages: "run 3 (python3 train.py)".
struct NamedRun {
    store::History history;
    store::RunRecord record;
    std::string what;
};
Result<NamedRun> open_named_run(const std::string& run, const std::string& db_flag, const std::string& config_path);

}  // namespace baton::cli
