#include "cli/cli_common.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/listen_address.hpp"
#include "core/printable.hpp"
#include "hang/stack_shim.hpp"
#include "sample/linux/kept_file.hpp"
#include "store/history.hpp"
#include "store/history_runs.hpp"

extern char** environ;

namespace baton::cli {

int usage_error(const std::string& message) {
    std::fprintf(stderr, "baton: error: %s\n", escaped_line(message).c_str());
    return kExitUsage;
}

int agent_port(const Config& c) {
    const Result<ListenAddress> listen = parse_listen_address(c.serve.listen);
    return listen.ok() ? listen->port : kDefaultAgentPort;
}

int runtime_error(const std::string& message) {
    std::fprintf(stderr, "baton: %s\n", escaped_line(message).c_str());
    return kExitFailure;
}

int agent_error(const Error& error) {
    runtime_error(error.message);
    return error.is(ErrorCode::unavailable) || error.is(ErrorCode::disconnected) || error.is(ErrorCode::timed_out)
               ? kExitNoAgent
               : kExitFailure;
}

void add_hang_options(CLI::App* cmd, double& hang_seconds, std::string& on_hang) {
    add_duration_option(cmd, "--hang-seconds", hang_seconds,
                        "No rank completing a step (or no stack moving) this long is a hang; 0: the larger of 60s and "
                        "10 x the median step (default: [launch] hang_seconds)",
                        0, 7 * 86400);
    cmd->add_option("--on-hang", on_hang,
                    "report: print the verdict, keep the job; stop: end it, exit status 124 (default: [launch] "
                    "on_hang, report)")
        ->check(CLI::IsMember({"report", "stop"}));
}

Result<std::string> make_private_temp_dir(const std::string& prefix) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
    if (!::mkdtemp(pattern.data())) return os_error("cannot make a directory " + pattern, errno);
    return pattern;
}

void add_auto_hook_flag(CLI::App* cmd, bool& no_auto_hook) {
    cmd->add_flag("--no-auto-hook", no_auto_hook,
                  "Do not measure steps in the command's Python processes unless the script calls baton.torch.watch "
                  "(by default PyTorch's optimizer steps and DataLoader waits are measured with no code change; "
                  "docs/python.md)");
}

void apply_auto_hook_flag(bool no_auto_hook, std::map<std::string, std::string>& env) {
    if (no_auto_hook) env[hang::kAutoHookVariable] = "0";
}

void apply_auto_hook_flag(bool no_auto_hook) {
    if (no_auto_hook) ::setenv(hang::kAutoHookVariable, "0", 1);
}

CLI::Option* add_duration_option(CLI::App* cmd, const std::string& name, double& seconds, const std::string& help,
                                 double min, double max) {
    CLI::Validator to_seconds(
        [](std::string& text) -> std::string {
            const std::optional<double> d = parse_duration(text);
            if (!d) return "'" + text + "' is not a duration (such as 90, 90s, 1m30s, 5min, 2h or 30d)";
            text = fmt::format("{}", *d);
            return "";
        },
        "DURATION");
    CLI::Validator in_range(
        [min, max](std::string& text) -> std::string {
            const double v = std::stod(text);  // what to_seconds wrote
            if (v < min || v > max) return fmt::format("{} s is outside {} s to {} s", text, min, max);
            return "";
        },
        "");
    return cmd->add_option(name, seconds, help)->transform(to_seconds)->check(in_range);
}

int error_exit(const Error& error) {
    return error.is(ErrorCode::invalid_argument) ? usage_error(error.message) : runtime_error(error.message);
}

int start_failure(const Error& error) {
    runtime_error(error.message);
    return error.is(ErrorCode::not_found) ? 127 : error.is(ErrorCode::not_executable) ? 126 : kExitFailure;
}

Result<SamplerOptions> sampler_options(const Config& c, const std::string& proc_root, const std::string& sys_root,
                                       bool no_gpus) {
    SamplerOptions o = SamplerOptions::from_config(c);
    if (!proc_root.empty()) o.proc_root = proc_root;
    if (!sys_root.empty()) o.sys_root = sys_root;
    o.gpus = !no_gpus;
    // Every figure of the machine comes from <root>/stat and its neighbours: a root without a
    // readable stat file with CPU lines is not a /proc.
    os::ReadBuffer stat;
    const std::string path = o.proc_root + "/stat";
    if (!os::read_file(path, stat))
        return make_error("cannot read " + path + ": " + std::strerror(errno) + " (is " + o.proc_root + " a /proc?)");
    if (stat.view().rfind("cpu ", 0) != 0) return make_error(path + " is not a /proc stat file (no cpu line)");
    return o;
}

std::map<std::string, std::string> environment_variables() {
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
        const std::string kv = *e;
        const std::size_t eq = kv.find('=');
        if (eq != std::string::npos && eq > 0) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
    return env;
}

Result<std::string> history_path(const std::string& db_flag, const std::string& config_path) {
    if (!db_flag.empty()) return db_flag;
    Result<Config> c = load_config(config_path);
    if (!c.ok()) return c.error();
    return c->history.db.empty() ? store::History::default_path() : c->history.db;
}

std::string history_path(const std::string& db_flag, const Config& config) {
    if (!db_flag.empty()) return db_flag;
    return config.history.db.empty() ? store::History::default_path() : config.history.db;
}

std::string state_file(const std::string& name, const std::string& config_path) {
    Result<std::string> db = history_path("", config_path);
    return store::History::beside(db.ok() ? *db : store::History::default_path(), name);
}

Result<store::History> open_history(const std::string& db_flag, const std::string& config_path,
                                    store::HistoryAccess access) {
    Result<std::string> path = history_path(db_flag, config_path);
    if (!path.ok()) return path.error();
    return store::History::open(*path, access);
}

Result<NamedRun> open_named_run(const std::string& run, const std::string& db_flag, const std::string& config_path) {
    Result<std::int64_t> id = store::parse_run_id(run);
    if (!id.ok()) return make_error(ErrorCode::invalid_argument, id.error().message);
    Result<store::History> h = open_history(db_flag, config_path);
    if (!h.ok()) return h.error();
    Result<store::RunRecord> r = h->run_reads().run(*id);
    if (!r.ok()) return r.error();
    std::string what = "run " + std::to_string(*id) + " (" + r->name + ")";
    return NamedRun{std::move(*h), std::move(*r), std::move(what)};
}

}  // namespace baton::cli
