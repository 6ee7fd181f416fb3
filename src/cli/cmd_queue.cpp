#include "cli/cmd_queue.hpp"

#include <chrono>
#include <filesystem>
#include <climits>
#include <cstdio>
#include <ctime>
#include <thread>
#include <tuple>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli_common.hpp"
#include "cli/cmd_slurm.hpp"
#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/printable.hpp"
#include "queue/job_request.hpp"
#include "queue/job_shim.hpp"
#include "queue/job_text.hpp"
#include "queue/queue_calls.hpp"
#include "queue/queue_client.hpp"
#include "queue/slurm.hpp"
#include "store/history.hpp"

namespace baton::cli {

namespace {

using nlohmann::json;

// The agent `baton submit` starts for this user: its log beside the history.
std::string agent_log(const std::string& config_path) {
    return state_file("agent.log", config_path);
}

std::vector<std::string> agent_args(const std::string& config_path) {
    if (config_path.empty()) return {};
    return {"--config", config_path};
}

int print_json(const json& j) {
    return write_stdout(j.dump(2, ' ', false, json::error_handler_t::replace) + "\n") ? kExitOk : kExitFailure;
}

int run_submit(const QueueArgs& a, const std::vector<std::string>& command, const std::string& config_path) {
    std::vector<std::string> argv = command;
    if (!argv.empty() && argv.front() == "--") argv.erase(argv.begin());
    if (argv.empty()) return usage_error("submit: no command given (baton submit [OPTIONS] -- CMD [ARGS...])");
    std::string cwd;
    if (!a.submit.cwd.empty()) {
        char real[PATH_MAX];
        if (!::realpath(a.submit.cwd.c_str(), real))
            return usage_error("--cwd " + a.submit.cwd + ": no such directory");
        cwd = real;
    } else {
        char here[PATH_MAX];
        if (!::getcwd(here, sizeof here)) return runtime_error("cannot tell the current directory (give --cwd DIR)");
        cwd = here;
    }
    if (a.submit.slurm) return run_submit_slurm(a, argv, cwd, config_path);
    std::map<std::string, std::string> env = environment_variables();
    apply_auto_hook_flag(a.no_auto_hook, env);
    queue::SubmitFlags flags = a.submit;
    if (!flags.array_file.empty()) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(flags.array_file, ec))
            return usage_error("--array-file " + flags.array_file + ": no such file");
        // (the request carries every line: a file that could not fit in one is refused here)
        std::optional<std::string> text = read_small_file(flags.array_file, queue::kMaxRequestBytes / 2);
        if (!text)
            return usage_error("--array-file " + flags.array_file + ": cannot be read, or is larger than " +
                               std::to_string(queue::kMaxRequestBytes / 2 / 1024 / 1024) + " MiB");
        flags.array_file_text = std::move(*text);
    }
    Result<queue::Submission> submission = queue::local_submission(flags, argv, cwd, env, unix_millis());
    if (!submission.ok()) return error_exit(submission.error());

    Result<queue::AgentConnection> agent = queue::connect_or_start_agent(
        env, "/proc/self/exe", agent_args(config_path), [&config_path] { return agent_log(config_path); });
    if (!agent.ok()) return agent_error(agent.error());
    if (const std::optional<queue::StartedAgent>& started = agent->started)
        std::fprintf(stderr,
                     "baton: no agent was running: started one for you (pid %d, socket %s, log %s); it stays after "
                     "your jobs: kill %d stops it, running jobs go on and the next agent takes them up\n",
                     started->pid, started->socket.c_str(), started->log.c_str(), started->pid);
    queue::Request r;
    r.op = queue::Op::submit;
    r.submit = std::move(*submission);
    Result<queue::Reply> reply = queue::call(agent->fd, r);
    ::close(agent->fd);
    if (!reply.ok()) return agent_error(reply.error());
    // The agent refusing the job (a bad request) is the caller's mistake: exit 2, as a bad flag.
    Result<queue::Submitted> job = queue::parse_submit_reply(*reply);
    if (!job.ok()) {
        Error refused = job.error();
        refused.message = "submit: " + refused.message;
        return agent_error(refused);
    }
    if (!job->ids.empty()) {  // an array: every element's id, one a line
        if (a.json)
            return print_json({{"ok", true}, {"array", job->id}, {"ids", job->ids}, {"state", state_name(job->state)}});
        std::string out;
        for (std::int64_t id : job->ids) out += std::to_string(id) + "\n";
        return write_stdout(out) ? kExitOk : kExitFailure;
    }
    if (a.json) return print_json({{"ok", true}, {"id", job->id}, {"state", state_name(job->state)}});
    return write_stdout(std::to_string(job->id) + "\n") ? kExitOk : kExitFailure;
}

// `baton edit JOB ... [-- CMD ARGS...]`: the job as edited, as `show` prints it.
int run_edit(const QueueArgs& a, std::int64_t id, const std::vector<std::string>& command) {
    std::vector<std::string> argv = command;
    if (!argv.empty() && argv.front() == "--") argv.erase(argv.begin());
    Result<queue::JobEdit> e = queue::edit_of(a.edit, argv);
    if (!e.ok()) return usage_error(e.error().message);
    Result<queue::JobView> job = queue::edit_job(environment_variables(), id, *e);
    if (!job.ok()) return agent_error(job.error());
    if (a.json) return print_json(queue::job_view_json(*job));
    return write_stdout(queue::job_text(*job)) ? kExitOk : kExitFailure;
}

// `baton group`: the groups; `group add NAME --parallel N`; `group remove NAME`.
int run_groups(const QueueArgs& a) {
    Result<std::vector<queue::GroupView>> groups = queue::list_groups(environment_variables());
    if (!groups.ok()) return agent_error(groups.error());
    if (a.json) {
        json out = json::array();
        for (const queue::GroupView& g : *groups)
            out.push_back({{"name", g.name},
                           {"parallel", g.parallel},
                           {"owner", g.owner},
                           {"running", g.running},
                           {"waiting", g.waiting}});
        return print_json(out);
    }
    if (groups->empty()) return write_stdout("no groups (baton group add NAME --parallel N makes one)\n") ? 0 : 1;
    std::vector<std::vector<std::string>> rows{{"GROUP", "PARALLEL", "RUNNING", "WAITING", "OWNER"}};
    for (const queue::GroupView& g : *groups)
        rows.push_back({printable(g.name), std::to_string(g.parallel), std::to_string(g.running),
                        std::to_string(g.waiting), printable(g.owner)});
    return write_stdout(queue::columns_text(rows)) ? kExitOk : kExitFailure;
}

int run_group_change(const QueueArgs& a, bool add) {
    // A name no group can have is the command line's fault, said before any agent is asked.
    if (Status named = queue::check_group_name(a.group_name); !named.ok()) return error_exit(named.error());
    const std::map<std::string, std::string> env = environment_variables();
    unsigned parallel = a.parallel;
    bool unchanged = false;
    if (add && parallel == 0) {
        // No --parallel: an existing group keeps its limit (a second `group add` must not reset it);
        // a new one gets 1.
        Result<std::vector<queue::GroupView>> groups = queue::list_groups(env);
        if (!groups.ok()) return agent_error(groups.error());
        parallel = 1;
        for (const queue::GroupView& g : *groups)
            if (g.name == a.group_name) parallel = g.parallel, unchanged = true;
    }
    if (!unchanged) {
        Status done = add ? queue::set_group(env, a.group_name, parallel) : queue::remove_group(env, a.group_name);
        if (!done.ok()) return agent_error(done.error());
    }
    if (a.json)
        return print_json(add ? json{{"name", a.group_name}, {"parallel", parallel}, {"changed", !unchanged}}
                              : json{{"name", a.group_name}, {"removed", true}});
    const std::string said = !add        ? fmt::format("group {}: removed\n", printable(a.group_name))
                             : unchanged ? fmt::format("group {}: {} at once (unchanged: --parallel N changes it)\n",
                                                       printable(a.group_name), parallel)
                                         : fmt::format("group {}: {} at once\n", printable(a.group_name), parallel);
    return write_stdout(said) ? kExitOk : kExitFailure;
}

// `baton logs [-f]`. Following, an agent that goes away (restarted, upgraded, killed) is waited for:
// its jobs run on without it, and the next agent serves the same file from the same offset, so
// nothing is printed twice or lost. Said once on stderr; Ctrl-C ends the wait.
int run_logs(const QueueArgs& a, std::int64_t id) {
    const std::map<std::string, std::string> env = environment_variables();
    std::uint64_t offset = 0;
    bool read_once = false, said = false;
    for (;;) {
        Result<queue::LogChunk> chunk = queue::read_log(env, id, a.stderr_stream, offset);
        if (!chunk.ok() && a.follow && read_once &&
            (chunk.is(ErrorCode::unavailable) || chunk.is(ErrorCode::disconnected))) {
            if (!said)
                std::fprintf(stderr, "baton: the agent went away (%s); following job %lld again once one answers\n",
                             chunk.error().message.c_str(), static_cast<long long>(id));
            said = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
            continue;
        }
        if (!chunk.ok()) return agent_error(chunk.error());
        read_once = true;
        if (!chunk->data.empty() && !write_stdout(chunk->data)) return kExitFailure;
        offset = chunk->offset;
        if (offset < chunk->size) continue;
        if (!a.follow || chunk->ended) return kExitOk;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
}

// `baton wait`: the job's own exit status once it ends (docs/queue.md).
int run_wait(const QueueArgs& a, std::int64_t id) {
    Result<queue::JobView> job = queue::wait_for_job(environment_variables(), id);
    if (!job.ok()) return agent_error(job.error());
    if (a.json) print_json(queue::job_view_json(*job));
    if (job->state == store::JobState::done) return 0;
    if (job->exit_status && *job->exit_status != 0) return *job->exit_status & 255;
    return kExitFailure;
}

// `baton queue`: this machine's jobs, and those handed to Slurm.
// The table of `baton queue` (or its JSON), or the error that stops it.
Result<std::string> queue_listing(const QueueArgs& a, const std::string& config_path) {
    const queue::SlurmRows slurm = slurm_queue_rows(a.all, config_path);
    Result<std::vector<queue::JobView>> jobs = queue::list_jobs(environment_variables(), a.all);
    // No agent, but jobs handed to Slurm: those alone (the agent is this machine's queue).
    const bool no_agent = jobs.is(ErrorCode::unavailable);
    if (!jobs.ok() && !(no_agent && !slurm.rows.empty())) return jobs.error();
    if (slurm.problem)
        std::fprintf(stderr, "baton: the jobs handed to Slurm are not listed: %s\n", slurm.problem->message.c_str());
    const std::vector<queue::JobView> mine = jobs.ok() ? *jobs : std::vector<queue::JobView>{};
    if (a.json) {
        json out = json::array();
        for (const queue::JobView& j : mine) out.push_back(queue::job_view_json(j));
        for (const json& row : slurm.rows) out.push_back(row);
        return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    }
    std::vector<queue::JobRow> rows;
    for (const queue::JobView& j : mine) rows.push_back(queue::job_row(j));
    for (const json& row : slurm.rows) rows.push_back(queue::slurm_row(row));
    if (rows.empty() && jobs.ok()) {  // not a bare header: say whether --all would show more
        Result<std::vector<queue::JobView>> every = a.all ? jobs : queue::list_jobs(environment_variables(), true);
        return queue::no_open_jobs_text(every.ok() ? every->size() : 0);
    }
    return queue::jobs_table(rows);
}

// `baton queue [--watch]`: once, or again every --interval until interrupted: in place on a terminal
// (the screen cleared, as watch(1) does), else frames one after another under their time. An agent
// that does not answer is said in the frame and asked again at the next.
int run_list(const QueueArgs& a, const std::string& config_path) {
    if (a.pool) {
        if (a.watch || a.all) return usage_error("queue: --gpus lists the GPU pool; give it alone (or with --json)");
        Result<queue::PoolView> pool = queue::queue_pool(environment_variables());
        if (!pool.ok()) return agent_error(pool.error());
        if (a.json) return print_json(queue::pool_view_json(*pool));
        return write_stdout(queue::pool_table(*pool)) ? kExitOk : kExitFailure;
    }
    if (!a.watch) {
        Result<std::string> text = queue_listing(a, config_path);
        if (!text.ok()) return agent_error(text.error());
        return write_stdout(*text) ? kExitOk : kExitFailure;
    }
    if (a.json) return usage_error("queue: --watch draws the table again and again; --json prints it once");
    const bool terminal = ::isatty(STDOUT_FILENO) == 1;
    for (;;) {
        Result<std::string> text = queue_listing(a, config_path);
        const std::time_t now = std::time(nullptr);
        char when[32];
        std::strftime(when, sizeof when, "%H:%M:%S", std::localtime(&now));
        std::string frame = terminal ? "\x1b[H\x1b[2J" : "";
        frame += fmt::format("every {:g}s: baton queue{}  {}\n\n", a.interval, a.all ? " --all" : "", when);
        frame += text.ok() ? *text : "baton: " + text.error().message + " (asked again in a moment)\n";
        if (!terminal) frame += "\n";
        if (!write_stdout(frame)) return kExitFailure;
        std::this_thread::sleep_for(std::chrono::duration<double>(a.interval));
    }
}

int run_show(const QueueArgs& a, std::int64_t id) {
    Result<queue::JobView> job = queue::show_job(environment_variables(), id);
    if (!job.ok()) return agent_error(job.error());
    if (a.json) return print_json(queue::job_view_json(*job));
    return write_stdout(queue::job_text(*job)) ? kExitOk : kExitFailure;
}

// `baton restart`: the new job's id, as submit prints it.
int run_restart(const QueueArgs& a, std::int64_t id) {
    Result<queue::Submitted> job = queue::restart_job(environment_variables(), id);
    if (!job.ok()) return agent_error(job.error());
    if (a.json) return print_json({{"ok", true}, {"id", job->id}, {"state", state_name(job->state)}, {"from", id}});
    return write_stdout(std::to_string(job->id) + "\n") ? kExitOk : kExitFailure;
}

// `baton queue clean`: how many ended jobs were forgotten.
int run_clean(const QueueArgs& a) {
    Result<std::vector<std::int64_t>> removed = queue::clean_jobs(environment_variables(), a.successful_only);
    if (!removed.ok()) return agent_error(removed.error());
    if (a.json) return print_json({{"removed", *removed}});
    return write_stdout(fmt::format("forgot {} ended job(s)\n", removed->size())) ? kExitOk : kExitFailure;
}

// cancel, hold, release, retry, pause, resume: what became of each job.
int run_change(const QueueArgs& a, queue::Op op, const std::vector<std::int64_t>& ids) {
    Result<std::vector<queue::JobChange>> changes = queue::change_jobs(environment_variables(), op, ids, a.grace);
    if (!changes.ok()) return agent_error(changes.error());
    if (a.json) {
        json out = json::array();
        for (const queue::JobChange& c : *changes) out.push_back({{"id", c.id}, {"state", c.outcome}});
        return print_json(out);
    }
    std::string out;
    for (const queue::JobChange& c : *changes) out += fmt::format("job {}: {}\n", c.id, c.outcome);
    return write_stdout(out) ? kExitOk : kExitFailure;
}

}  // namespace

CLI::App* QueueCommands::parsed() const {
    for (CLI::App* c : {submit, queue_clean, queue, show, logs, cancel, wait, hold, release, retry, pause, resume,
                        restart, edit, group_add, group_remove, group, shim})
        if (c->parsed()) return c;
    return nullptr;
}

namespace {

CLI::App* add_submit_command(CLI::App& app, QueueArgs& a) {
    CLI::App* s = app.add_subcommand("submit", "Queue a command for this machine's GPUs and CPUs; prints its job id");
    s->add_option("--gpus", a.submit.gpus, "How many GPUs it needs, each its own (default 0)")
        ->check(CLI::Range(0u, 4096u));
    s->add_option("--gpu", a.submit.gpu,
                  "Exactly these GPUs: indices or UUIDs (a unique prefix will do), comma-separated");
    s->add_option("--gpu-mem", a.submit.gpu_mem,
                  "GPU memory it needs on each GPU (20G), or auto: the peak of earlier runs of --name");
    s->add_option("--cpus", a.submit.cpus,
                  "CPUs pinned to it (default: 1 without GPUs, else the machine's CPUs per GPU for each GPU; 0: none "
                  "reserved, not pinned)")
        ->check(CLI::Range(0, 1 << 20));
    s->add_option("--mem", a.submit.mem,
                  "Host memory it needs (64G): it waits until that much is not promised to others");
    s->add_option("--priority", a.submit.priority, "Higher starts first (default 0)")
        ->check(CLI::Range(-1000000, 1000000));
    s->add_option("--after", a.submit.after,
                  "Start after these jobs end: JOB[,JOB...]; with :ok, only after each succeeded");
    s->add_option("--name", a.submit.name, "A name for the job and its run (default: the command)");
    s->add_option("--retries", a.submit.retries,
                  "Run it again up to N times when it dies out of memory (--on-oom retry) or is lost")
        ->check(CLI::Range(0u, 1000u));
    s->add_option("--on-oom", a.submit.on_oom, "retry (with BATON_RETRY=n and BATON_OOM=1) or fail (default)")
        ->check(CLI::IsMember({"retry", "fail"}));
    s->add_flag("--share", a.submit.share,
                "May share a GPU with other --share jobs while their --gpu-mem fit in its memory");
    s->add_flag("--hold", a.submit.hold, "Queue it held: it starts only after baton release");
    add_auto_hook_flag(s, a.no_auto_hook);
    s->add_option("--at", a.submit.at,
                  "Start it no earlier than this local time: HH:MM[:SS] (the next one) or YYYY-MM-DD HH:MM[:SS]");
    s->add_option("--delay", a.submit.delay, "Start it no earlier than this long from now: 90s, 30m, 2h, 1d");
    s->add_option("--cwd", a.submit.cwd, "Run it in this directory (default: the current one)");
    s->add_flag("--slurm", a.submit.slurm,
                "Hand it to Slurm: an sbatch script that runs it under baton run, submitted with sbatch; its id is "
                "slurm:ID");
    s->add_option("--nodes", a.submit.nodes, "With --slurm: how many nodes (sbatch --nodes, one task each)")
        ->check(CLI::Range(1u, 100000u));
    s->add_flag("--dry-run", a.submit.dry_run, "With --slurm: print the sbatch script instead of submitting it");
    s->add_option("--array", a.submit.array,
                  "One job per index: 1-1000, 0-99:10 (a step), 1,5,7; %N runs N at once. Each gets "
                  "BATON_ARRAY_INDEX, and {} in the command is replaced by its index; prints every job's id");
    s->add_option("--array-file", a.submit.array_file,
                  "One job per non-blank line of FILE: {} in the command is replaced by the line (else the line is "
                  "its last argument); BATON_ARRAY_INDEX is the line's number");
    s->add_option("--max-parallel", a.submit.max_parallel, "With --array or --array-file: at most N of them at once")
        ->check(CLI::Range(1u, 1000000u));
    s->add_option("--group", a.submit.group, "In this group (baton group add NAME --parallel N): its limit applies");
    s->add_option("--on-end", a.submit.on_end,
                  "A shell command run as you when it ends: {id} {name} {status} {exit} {user} are replaced (quoted); "
                  "killed after [queue] on_end_timeout (60s)");
    s->add_flag("--json", a.json, "Print the answer as JSON");
    s->footer("Usage: baton submit [OPTIONS] -- CMD [ARGS...]");
    return s;
}

}  // namespace

bool is_queue_command(const std::string& word) {
    for (const char* name : {"submit", "queue", "show", "logs", "cancel", "wait", "hold", "release", "retry", "pause",
                             "resume", "restart", "edit", "group", "job-shim"})
        if (word == name) return true;
    return false;
}

QueueCommands add_queue_commands(CLI::App& app, QueueArgs& a) {
    QueueCommands c{};
    c.submit = add_submit_command(app, a);

    c.queue = app.add_subcommand("queue", "List the queue's jobs: id, owner, state, GPUs, CPUs, waited, ran, name");
    c.queue->add_flag("--all", a.all, "Ended jobs too");
    c.queue->add_flag("--json", a.json, "Print the jobs as JSON");
    c.queue->add_flag("--gpus", a.pool,
                      "The GPUs the queue may give, in the order it gives them, with their memory and holders");
    c.queue->add_flag("-w,--watch", a.watch, "Draw the table again every --interval, in place, until Ctrl-C");
    add_duration_option(c.queue, "--interval", a.interval, "With --watch: how often (default 2s; 0.1s to 1h)", 0.1,
                        3600);
    c.queue_clean = c.queue->add_subcommand(
        "clean", "Forget your ended jobs (root: everyone's) and their logs; their runs stay in the history");
    c.queue_clean->add_flag("--successful-only", a.successful_only, "Only the jobs that are done (exit status 0)");
    c.queue_clean->add_flag("--json", a.json, "Print the ids forgotten as JSON");

    c.show = app.add_subcommand("show", "Everything about one job, with the reason it waits");
    c.show->add_option("job", a.jobs, "The job id")->required()->expected(1);
    c.show->add_flag("--json", a.json, "Print the job as JSON");

    c.logs = app.add_subcommand("logs", "Print a job's output (its owner or root)");
    c.logs->add_option("job", a.jobs, "The job id")->required()->expected(1);
    c.logs->add_flag("-f,--follow", a.follow, "Keep printing as the job writes, until it ends");
    c.logs->add_flag("--stderr", a.stderr_stream, "Its stderr instead of its stdout");

    c.cancel = app.add_subcommand("cancel",
                                  "Cancel jobs: queued ones leave the queue, running ones end with their whole tree");
    c.cancel->add_option("jobs", a.jobs, "The job ids")->required();
    add_duration_option(c.cancel, "--grace", a.grace, "Time between SIGTERM and SIGKILL, 0 to 1h (default 10s)", 0,
                        3600);
    c.cancel->add_flag("--json", a.json, "Print the answer as JSON");

    c.wait = app.add_subcommand("wait", "Wait for a job to end; exits with its exit status");
    c.wait->add_option("job", a.jobs, "The job id")->required()->expected(1);
    c.wait->add_flag("--json", a.json, "Print the ended job as JSON");

    // The ones that change one job's state.
    for (auto [cmd, name, what] :
         {std::tuple{&c.hold, "hold", "Keep a queued job from starting until baton release"},
          std::tuple{&c.release, "release", "Let a held job start again"},
          std::tuple{&c.retry, "retry", "Queue an ended job again, as its next attempt"},
          std::tuple{&c.pause, "pause",
                     "Stop a running job's whole tree (SIGSTOP) until baton resume; it keeps its GPUs and CPUs"},
          std::tuple{&c.resume, "resume", "Continue a paused job (SIGCONT)"},
          std::tuple{&c.restart, "restart",
                     "Queue a new job with an ended job's command, directory, environment and resources; prints "
                     "its id"}}) {
        *cmd = app.add_subcommand(name, what);
        (*cmd)->add_option("job", a.jobs, "The job id")->required()->expected(1);
        (*cmd)->add_flag("--json", a.json, "Print the answer as JSON");
    }

    c.edit =
        app.add_subcommand("edit",
                           "Change a job that has not started: its resources, priority, dependencies, name, group, "
                           "or its command (-- CMD ARGS...)");
    c.edit->add_option("job", a.jobs, "The job id")->required()->expected(1);
    c.edit->add_option("--gpus", a.edit.gpus, "How many GPUs (the GPUs it named are forgotten)")
        ->check(CLI::Range(0u, 4096u));
    c.edit->add_option("--gpu", a.edit.gpu, "Exactly these GPUs: indices or UUIDs, comma-separated");
    c.edit->add_option("--gpu-mem", a.edit.gpu_mem, "GPU memory it needs on each GPU (20G; 0: none declared)");
    c.edit->add_option("--cpus", a.edit.cpus, "CPUs pinned to it (0: none reserved)")->check(CLI::Range(0, 1 << 20));
    c.edit->add_option("--mem", a.edit.mem, "Host memory it needs (64G; 0: none)");
    c.edit->add_option("--priority", a.edit.priority, "Higher starts first")->check(CLI::Range(-1000000, 1000000));
    c.edit->add_option("--after", a.edit.after, "Start after these jobs: JOB[,JOB...][:ok]; \"\": after none");
    c.edit->add_option("--name", a.edit.name, "Its name (\"\": its command's)");
    c.edit->add_option("--group", a.edit.group, "Its group (\"\": none)");
    c.edit->add_flag("--json", a.json, "Print the edited job as JSON");
    c.edit->footer("Usage: baton edit JOB [OPTIONS] [-- CMD ARGS...]");

    c.group = app.add_subcommand("group",
                                 "List the queue's groups: how many of each one's jobs may run at once, run, and wait");
    c.group->add_flag("--json", a.json, "Print the groups as JSON");
    c.group_add = c.group->add_subcommand(
        "add", "Add a group whose jobs (baton submit --group NAME) run at most N at once, or change its N");
    c.group_add->add_option("name", a.group_name, "The group's name: letters, digits, '.', '_', '-'")->required();
    c.group_add
        ->add_option("--parallel", a.parallel,
                     "How many of its jobs may run at once (a new group: default 1; an existing one: its "
                     "limit is kept unless this is given)")
        ->check(CLI::Range(1u, 1000000u));
    c.group_remove = c.group->add_subcommand("remove", "Remove a group that has no open job (who added it, or root)");
    c.group_remove->add_option("name", a.group_name, "The group's name")->required();

    // The supervisor of one job, started by the agent (never by hand): hidden from the help.
    c.shim = app.add_subcommand("job-shim", "");
    c.shim->group("");
    c.shim->add_option("dir", a.shim_dir)->required();
    return c;
}

int run_queue_command(const QueueCommands& c, const QueueArgs& a, const std::vector<std::string>& command,
                      const std::string& config_path) {
    CLI::App* which = c.parsed();
    if (which == c.shim) return queue::run_job_shim(a.shim_dir);
    if (which == c.submit) return run_submit(a, command, config_path);
    if (which == c.group) return run_groups(a);
    if (which == c.group_add || which == c.group_remove) return run_group_change(a, which == c.group_add);
    std::vector<std::int64_t> ids, slurm_ids;
    for (const std::string& w : a.jobs) {
        if (std::optional<std::int64_t> sid = queue::slurm_job_id(w)) {
            slurm_ids.push_back(*sid);
            continue;
        }
        Result<std::int64_t> id = queue::parse_job_id(w);
        if (!id.ok()) return usage_error(id.error().message);
        ids.push_back(*id);
    }
    // Jobs handed to Slurm: its commands, not the agent.
    if (!slurm_ids.empty()) {
        if (which == c.restart)
            return usage_error("restart: a job handed to Slurm is queued again with baton retry slurm:ID");
        if (which == c.edit) return usage_error("edit: a job handed to Slurm is changed with scontrol update");
        if (which == c.pause || which == c.resume)
            return usage_error(std::string(which->get_name()) +
                               ": a Slurm job is suspended and resumed by Slurm's administrators (scontrol suspend)");
        const SlurmOp op = which == c.show      ? SlurmOp::show
                           : which == c.logs    ? SlurmOp::logs
                           : which == c.wait    ? SlurmOp::wait
                           : which == c.hold    ? SlurmOp::hold
                           : which == c.release ? SlurmOp::release
                           : which == c.retry   ? SlurmOp::retry
                                                : SlurmOp::cancel;
        if (op != SlurmOp::cancel || ids.empty()) {
            int status = kExitOk;
            for (std::int64_t sid : slurm_ids) status = std::max(status, run_slurm_command(op, a, sid, config_path));
            return status;
        }
        return usage_error("cancel: give this machine's jobs and Slurm's (slurm:ID) in two commands");
    }
    if (which == c.queue_clean) return run_clean(a);
    if (which == c.restart) return run_restart(a, ids.front());
    if (which == c.edit) return run_edit(a, ids.front(), command);
    if (which == c.logs) return run_logs(a, ids.front());
    if (which == c.wait) return run_wait(a, ids.front());
    if (which == c.queue) return run_list(a, config_path);
    if (which == c.show) return run_show(a, ids.front());
    return run_change(a,
                      which == c.cancel    ? queue::Op::cancel
                      : which == c.hold    ? queue::Op::hold
                      : which == c.release ? queue::Op::release
                      : which == c.pause   ? queue::Op::pause
                      : which == c.resume  ? queue::Op::resume
                                           : queue::Op::retry,
                      ids);
}

}  // namespace baton::cli
