#include "cli/cmd_launch.hpp"

#include <cstdio>
#include <cstdlib>
#include <grp.h>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/config.hpp"
#include "core/printable.hpp"
#include "doctor/facts.hpp"
#include "launch/launch_plan.hpp"
#include "launch/launch_summary.hpp"
#include "launch/launcher.hpp"
#include "run/run_outputs.hpp"
#include "launch/preflight.hpp"
#include "store/history.hpp"

namespace baton::cli {

namespace {

std::optional<std::string> env_var(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
}

void print_notes(const std::vector<launch::PreflightNote>& notes) {
    for (const launch::PreflightNote& n : notes)
        if (!n.error) std::fprintf(stderr, "baton launch: warning: %s\n", escaped_line(n.text).c_str());
}

}  // namespace

CLI::App* add_launch_command(CLI::App& app, LaunchArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "launch", "Start the ranks of a distributed training (torchrun's environment), watch them, stop them cleanly");
    cmd->add_option("--nproc-per-node,--nproc_per_node", a.nproc_per_node,
                    "Ranks on this node: a number, 'gpu' (one per visible GPU) or 'auto' (GPUs, else CPUs); default 1");
    cmd->add_option("--nnodes", a.nnodes, "Nodes in the job (default 1, or the Slurm job's)");
    cmd->add_option("--node-rank,--node_rank", a.node_rank, "This node's place, 0 to nnodes-1 (default 0, or Slurm's)");
    cmd->add_option("--master-addr,--master_addr", a.master_addr,
                    "Address of the node of rank 0 (default 127.0.0.1 on one node, the first host inside Slurm)");
    cmd->add_option("--master-port,--master_port", a.master_port,
                    "Port of rank 0's store: a number or 'auto' (default: a free one on one node; 29500 on several)");
    cmd->add_option("--max-restarts,--max_restarts", a.max_restarts,
                    "Start the local ranks again up to this many times when one fails (default 0)")
        ->check(CLI::Range(0, 1000));
    cmd->add_option("--log-dir,--log_dir", a.log_dir,
                    "Where the ranks' logs go: DIR/RUN_ID/attempt_K/LOCAL_RANK/{stdout,stderr}.log (default "
                    "$XDG_STATE_HOME/baton/launch)");
    cmd->add_flag("--tee", a.tee, "Prefix each console line with its rank: [rank N]:");
    cmd->add_option("--local-ranks-filter,--local_ranks_filter", a.local_ranks_filter,
                    "Show only these local ranks' output on the console, e.g. 0 or 0,3 (all go to the logs)");
    cmd->add_flag("--bind-gpus", a.bind_gpus,
                  "Give local rank i exactly one GPU, the i-th visible (CUDA_VISIBLE_DEVICES)");
    cmd->add_option("--seed", a.seed, "Put the same BATON_SEED and PYTHONHASHSEED in every rank (0 to 4294967295)");
    cmd->add_option_function<std::string>(
           "--nccl-debug",
           [&a](const std::string& v) {
               a.nccl_debug_given = true;
               a.nccl_debug = v;
           },
           "NCCL_DEBUG=INFO with its file in each rank's log directory; --nccl-debug=INIT,NET picks subsystems")
        ->expected(0, 1);
    cmd->add_option("--nccl", a.nccl,
                    "NCCL presets, comma-separated: socket (NCCL_SOCKET_IFNAME = the interface routing to the "
                    "master address, NCCL_IB_DISABLE=1), ib (the same interface for the bootstrap, "
                    "NCCL_IB_DISABLE=0), debug (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,COLL,NET, a file per rank); "
                    "variables already set are kept")
        ->delimiter(',');
    add_duration_option(cmd, "--grace", a.grace,
                        "Time between SIGTERM to the ranks and SIGKILL when the launch ends, 0 to 1h (default 10s)", 0,
                        3600);
    add_hang_options(cmd, a.hang_seconds, a.on_hang);
    cmd->add_option("--db", a.db,
                    "History database (default: [history] db in the config, else $XDG_STATE_HOME/baton/baton.db)");
    cmd->add_flag("--no-db", a.no_db, "Do not record the launch");
    cmd->add_option("--report", a.report, "At the end, write the launch's HTML report (baton report) to FILE");
    cmd->add_option("--summary-json", a.summary_json,
                    "At the end, write the summary as one JSON object to FILE ('-': stdout)");
    cmd->add_flag("-m,--module", a.module, "Run the first word as a Python module (python -m MODULE)");
    cmd->add_flag("--no-python,--no_python", a.no_python, "Run the first word as a program, not a Python script");
    cmd->add_option("--python", a.python, "The Python that runs the script (default: python3 on PATH)");
    cmd->add_option("--run-id,--rdzv-id,--rdzv_id", a.run_id,
                    "The run's id (TORCHELASTIC_RUN_ID, its log directory); the same on every node (default: a new "
                    "one, slurm-JOBID inside Slurm)");
    cmd->add_option("--name", a.name, "A name for the run (default: the command's name)");
    add_duration_option(cmd, "--interval", a.interval, "Time between samples, 0.1 s to 60 s (default 0.5)", 0.1, 60);
    cmd->add_flag("--quiet", a.quiet, "Keep findings for the summary instead of printing them as they appear");
    cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML (no GPU checks, no GPU figures)");
    add_auto_hook_flag(cmd, a.no_auto_hook);
    cmd->footer(
        "Usage: baton launch [OPTIONS] (SCRIPT.py [ARGS...] | -m MODULE [ARGS...] | --no-python CMD [ARGS...])");
    return cmd;
}

namespace {

launch::LaunchRequest launch_request(const LaunchArgs& a, const std::vector<std::string>& command) {
    launch::LaunchRequest req;
    req.words = command;
    if (!req.words.empty() && req.words.front() == "--") req.words.erase(req.words.begin());
    req.module = a.module;
    req.no_python = a.no_python;
    req.python = a.python;
    req.nproc_per_node = a.nproc_per_node;
    req.nnodes = a.nnodes;
    req.node_rank = a.node_rank;
    req.master_addr = a.master_addr;
    req.master_port = a.master_port;
    req.max_restarts = a.max_restarts;
    req.run_id = a.run_id;
    req.local_ranks_filter = a.local_ranks_filter;
    req.seed = a.seed;
    req.bind_gpus = a.bind_gpus;
    if (a.nccl_debug_given) req.nccl_debug = a.nccl_debug;
    req.nccl = a.nccl;
    req.no_gpus = a.no_gpus;
    return req;
}

// What the launch reads of the machine once its flags are sound: the config, then the GPUs (a
// cheap snapshot, no processes) for the rank count and the checks.
struct LaunchContext {
    Config config;
    SamplerOptions sampler;
    Snapshot machine;
};

Result<launch::LaunchMachine> read_machine(const LaunchArgs& a, const std::string& config_path, LaunchContext& c) {
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return cfg.error();
    Result<SamplerOptions> so = sampler_options(*cfg, "", "", a.no_gpus);
    if (!so.ok()) return so.error();
    c.config = std::move(*cfg);
    c.sampler = *so;
    if (!a.no_gpus) {
        SamplerOptions quick = *so;
        quick.processes = false;
        quick.priming_seconds = 0;
        Sampler(quick).take(c.machine);
    }
    return launch::LaunchMachine{launch::visible_gpus(env_var, c.machine), c.machine.gpu_status, launch::usable_cpus()};
}

// The network and debugging switches, and PyTorch against the driver: warnings printed, the
// first error returned.
Status preflight(const LaunchArgs& a, const Snapshot& machine, int nproc_per_node) {
    std::vector<launch::PreflightNote> notes = launch::check_launch_environment(env_var, launch::read_interfaces());
    if (!a.no_python) {
        // The interpreter first: without torch every rank dies at its first line.
        const doctor::PythonFound asked = doctor::find_python(a.python, 20);
        std::vector<doctor::PythonFound> with_torch;
        if (asked.error.empty() && !asked.torch) with_torch = doctor::pythons_with_torch_here(asked.prefix, 20);
        const std::vector<launch::PreflightNote> python = launch::check_python(asked, with_torch);
        notes.insert(notes.end(), python.begin(), python.end());
    }
    if (!a.no_python && !machine.gpus.empty()) {
        const std::vector<launch::PreflightNote> torch = launch::check_torch_against_driver(
            machine,
            launch::cached_torch_probe(a.python, machine.gpu_driver_version.value_or(""), launch::default_cache_dir(),
                                       20),
            nproc_per_node);
        notes.insert(notes.end(), torch.begin(), torch.end());
    }
    print_notes(notes);
    for (const launch::PreflightNote& n : notes)
        if (n.error) return make_error("launch: " + n.text);
    return Ok{};
}

Result<launch::LaunchOptions> launch_options(const LaunchArgs& a, const launch::LaunchPlan& plan,
                                             const LaunchContext& c, const std::string& config_path) {
    launch::LaunchOptions o;
    o.topology = plan.topology;
    o.argv = plan.argv;
    o.extras = plan.extras;
    o.console_ranks = plan.console_ranks;
    o.log_dir = a.log_dir.empty() ? store::History::beside(history_path("", c.config), "launch") : a.log_dir;
    if (!c.config.launch.log_group.empty()) {
        const group* g = getgrnam(c.config.launch.log_group.c_str());
        if (!g) return make_error("launch: [launch] log_group '" + c.config.launch.log_group + "' is no group here");
        o.log_group = g->gr_gid;
    }
    o.tee = a.tee;
    o.grace_seconds = a.grace;
    o.name = a.name;
    o.interval_seconds = a.interval;
    o.quiet = a.quiet;
    o.sampler = c.sampler;
    o.thresholds = c.config.thresholds;
    o.hang.hang_seconds = a.hang_seconds >= 0 ? a.hang_seconds : c.config.launch.hang_seconds;
    o.hang.multi_node = plan.topology.nnodes > 1;
    o.stop_on_hang = (a.on_hang.empty() ? c.config.launch.on_hang : a.on_hang) == "stop";
    if (!a.no_db) {
        Result<std::string> db = history_path(a.db, config_path);
        if (!db.ok()) return db.error();
        o.db_path = *db;
    }
    return o;
}

}  // namespace

int run_launch_command(const LaunchArgs& a, const std::vector<std::string>& command, const std::string& config_path) {
    if (!a.report.empty() && a.no_db)
        return usage_error("launch: --report is made from the run's history; drop --no-db");
    apply_auto_hook_flag(a.no_auto_hook);
    LaunchContext context;
    launch::LaunchProbes probes = launch::system_launch_probes();
    probes.machine = [&] { return read_machine(a, config_path, context); };
    Result<launch::LaunchPlan> plan = launch::plan_launch(launch_request(a, command), env_var, probes);
    if (!plan.ok()) {
        if (plan.is(ErrorCode::invalid_argument)) return usage_error(plan.error().message);
        if (plan.is(ErrorCode::not_found)) return start_failure(plan.error());  // 127, as a shell
        return runtime_error(plan.error().message);
    }
    for (const std::string& w : plan->warnings)
        std::fprintf(stderr, "baton launch: warning: %s\n", escaped_line(w).c_str());
    if (Status ready = preflight(a, context.machine, plan->topology.nproc_per_node); !ready.ok())
        return runtime_error(ready.error().message);
    Result<launch::LaunchOptions> o = launch_options(a, *plan, context, config_path);
    if (!o.ok()) return runtime_error(o.error().message);

    Result<launch::LaunchResult> launched = launch::run_launch(*o);
    if (!launched.ok()) return start_failure(launched.error().context("launch"));
    std::string summary = launch::launch_summary_text(*launched, plan->topology);
    summary += run::write_run_outputs(launched->stats, o->db_path, a.report, a.summary_json, "launch");
    std::fputs(printable_text(summary).c_str(), stderr);
    return launched->exit_status;
}

}  // namespace baton::cli
