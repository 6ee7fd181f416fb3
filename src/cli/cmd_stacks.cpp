#include "cli/cmd_stacks.hpp"

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "hang/stack_request.hpp"
#include "hang/stacks_view.hpp"
#include "store/history.hpp"
#include "store/history_jobs.hpp"

namespace baton::cli {

CLI::App* add_stacks_command(CLI::App& app, StacksArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "stacks", "The Python stacks of a running job's processes (baton run, baton launch), grouped across ranks");
    cmd->add_option("run", a.run, "A running run's id (baton runs lists them)");
    cmd->add_option("--pid", a.pid, "A process instead: it and the processes it started (a launcher, torchrun, a rank)")
        ->check(CLI::Range(1L, 4194304L));
    cmd->add_option("--db", a.db,
                    "History database, for RUN (default: [history] db in the config, else "
                    "$XDG_STATE_HOME/baton/baton.db)");
    cmd->add_flag("--json", a.json, "One JSON object: every process, every thread, and the groups");
    cmd->add_flag("--threads", a.threads, "Every thread of each process, not only the main ones");
    cmd->add_flag("--all", a.all,
                  "Every process with the handler (a rank's workers, torchrun's agent), not only the ranks");
    add_duration_option(cmd, "--timeout", a.timeout, "How long to wait for the dumps (default 2s)", 0.05, 60);
    cmd->footer("Exit status: 0 when a process answered, 1 when none did (each says why), 2 for bad usage.");
    return cmd;
}

namespace {

// The processes under `root` that have the handler, or why there are none.
Result<std::vector<hang::StackTarget>> targets_under(pid_t root, bool all, const std::string& what) {
    std::vector<hang::StackTarget> found = hang::stack_targets_under(root, !all);
    if (!found.empty()) return found;
    return make_error(what + " has no Python process with baton's stack handler (yet)");
}

Result<std::vector<hang::StackTarget>> pid_targets(const StacksArgs& a) {
    const pid_t pid = static_cast<pid_t>(a.pid);
    Result<hang::StackTarget> self = hang::find_stack_target(pid);
    if (!self.ok() && (self.is(ErrorCode::not_found) || self.is(ErrorCode::permission_denied))) return self.error();
    // A launcher, `baton run` or torchrun: its ranks. A rank: itself (its workers share its RANK).
    std::vector<hang::StackTarget> found = hang::stack_targets_under(pid, !a.all);
    if (found.empty()) {
        if (!self.ok()) return self.error();
        found.push_back(std::move(*self));
    }
    return found;
}

Result<std::vector<hang::StackTarget>> run_targets(const StacksArgs& a, const std::string& config_path) {
    Result<NamedRun> run = open_named_run(a.run, a.db, config_path);
    if (!run.ok()) return run.error();
    const std::int64_t id = run->record.id;
    const store::RunRecord& r = run->record;
    const std::string& what = run->what;
    if (r.state != store::RunState::running)
        return make_error(what + " is not running (" + store::run_state_name(r.state) + "): its processes are gone");
    // A queued job's run is the agent's: its processes are below the job's supervisor, not below the
    // agent (whose other jobs are not this run's).
    if (Result<std::vector<store::JobRecord>> jobs = run->history.queue_jobs().jobs(true); jobs.ok())
        for (const store::JobRecord& j : *jobs)
            if (j.run_id == id && j.pid) {
                if (store::process_start_ticks(static_cast<pid_t>(*j.pid)) != j.pid_start_ticks)
                    return make_error(what + " is job " + std::to_string(j.id) + ", whose processes are gone");
                return targets_under(static_cast<pid_t>(*j.pid), a.all, what);
            }
    return targets_under(static_cast<pid_t>(r.owner.pid), a.all, what);
}

}  // namespace

int run_stacks(const StacksArgs& a, const std::string& config_path) {
    if (a.run.empty() == (a.pid == 0)) return usage_error("stacks: name a running run's id or --pid PID (one of them)");
    Result<std::vector<hang::StackTarget>> targets = a.pid ? pid_targets(a) : run_targets(a, config_path);
    if (!targets.ok()) return error_exit(targets.error());
    const std::vector<hang::StackReply> replies = hang::request_stacks(*targets, a.timeout);
    write_stdout(a.json ? hang::stacks_json(replies) : hang::stacks_text(replies, a.threads));
    for (const hang::StackReply& r : replies)
        if (!r.threads.empty()) return kExitOk;
    return runtime_error("stacks: none of the " + std::to_string(replies.size()) + " process(es) gave its stacks");
}

}  // namespace baton::cli
