#include "cli/cmd_launch.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <grp.h>
#include <random>
#include <sched.h>
#include <set>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "cli/cli_common.hpp"
#include "cli/cmd_report.hpp"
#include "core/config.hpp"
#include "core/printable.hpp"
#include "doctor/facts.hpp"
#include "launch/launcher.hpp"
#include "launch/preflight.hpp"
#include "launch/slurm_env.hpp"
#include "store/history.hpp"

namespace baton::cli {

namespace {

std::optional<std::string> env_var(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
}

std::optional<int> whole_number(const std::string& s, int max) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const int v = std::stoi(s);
    return v <= max ? std::optional<int>(v) : std::nullopt;
}

// 20261201-071203-3f9a1c: sorts by time, unique enough for a log directory.
std::string new_run_id() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
    std::random_device rd;
    return fmt::format("{}-{:06x}", buf, rd() & 0xffffff);
}

unsigned usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<unsigned>(n) : 1;
}

// Where the ranks' logs go by default: beside the history.
std::string default_log_dir() {
    const std::string db = History::default_path();
    const std::size_t slash = db.rfind('/');
    return slash == std::string::npos ? "baton-launch" : db.substr(0, slash) + "/launch";
}

bool on_path(const std::string& program) {
    if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        std::size_t colon = dirs.find(':', start);
        if (colon == std::string::npos) colon = dirs.size();
        const std::string dir = colon == start ? "." : dirs.substr(start, colon - start);
        if (access((dir + "/" + program).c_str(), X_OK) == 0) return true;
        start = colon + 1;
    }
    return false;
}

void print_notes(const std::vector<PreflightNote>& notes) {
    for (const PreflightNote& n : notes)
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
    add_duration_option(cmd, "--grace", a.grace,
                        "Time between SIGTERM to the ranks and SIGKILL when the launch ends, 0 to 1h (default 10s)", 0,
                        3600);
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
    cmd->footer(
        "Usage: baton launch [OPTIONS] (SCRIPT.py [ARGS...] | -m MODULE [ARGS...] | --no-python CMD [ARGS...])");
    return cmd;
}

int run_launch_command(const LaunchArgs& a, const std::vector<std::string>& command, const std::string& config_path) {
    std::vector<std::string> words = command;
    if (!words.empty() && words.front() == "--") words.erase(words.begin());
    if (words.empty())
        return usage_error(
            "launch: no script given (baton launch [OPTIONS] SCRIPT.py [ARGS...], -m MODULE or "
            "--no-python CMD)");
    if (a.module && a.no_python) return usage_error("launch: -m and --no-python exclude each other");
    if (!a.report.empty() && a.no_db)
        return usage_error("launch: --report is made from the run's history; drop --no-db");

    // The topology: flags, else the Slurm job's placement, else one node.
    Result<std::optional<SlurmPlacement>> slurm = slurm_placement(env_var);
    if (!slurm.ok()) return runtime_error("launch: " + slurm.error().message);
    LaunchTopology t;
    const bool slurm_fills = slurm->has_value() && a.nnodes == 0 && a.node_rank < 0 && a.master_addr.empty();
    if (slurm_fills) {
        const SlurmPlacement& p = **slurm;
        t.nnodes = p.nnodes;
        t.node_rank = p.node_rank;
        t.master_addr = p.master_addr;
        t.master_port = p.master_port;
    } else {
        t.nnodes = a.nnodes == 0 ? 1 : a.nnodes;
        t.node_rank = a.node_rank < 0 ? 0 : a.node_rank;
        if (!a.master_addr.empty()) t.master_addr = a.master_addr;
    }
    if (t.nnodes < 1) return usage_error("launch: --nnodes must be 1 or more");
    if (t.node_rank < 0 || t.node_rank >= t.nnodes)
        return usage_error(
            fmt::format("launch: --node-rank {} is not a node of {} (0 to {})", t.node_rank, t.nnodes, t.nnodes - 1));
    if (t.nnodes > 1 && a.master_addr.empty() && !slurm_fills)
        return usage_error("launch: several nodes need --master-addr (the address of node 0)");
    t.max_restarts = a.max_restarts;
    if (!a.run_id.empty()) {
        if (a.run_id.size() > 64 ||
            a.run_id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789._-") != std::string::npos ||
            a.run_id[0] == '.')
            return usage_error("launch: --run-id takes up to 64 letters, digits, '.', '_' or '-'");
        t.run_id = a.run_id;
    } else {
        t.run_id = slurm_fills ? "slurm-" + (*slurm)->job_id : new_run_id();
    }
    std::optional<std::set<int>> console_ranks;
    if (!a.local_ranks_filter.empty()) {
        console_ranks.emplace();
        std::size_t start = 0;
        while (start <= a.local_ranks_filter.size()) {
            std::size_t comma = a.local_ranks_filter.find(',', start);
            if (comma == std::string::npos) comma = a.local_ranks_filter.size();
            const std::optional<int> r = whole_number(a.local_ranks_filter.substr(start, comma - start), 1 << 20);
            if (!r) return usage_error("launch: --local-ranks-filter takes local ranks such as 0 or 0,3");
            console_ranks->insert(*r);
            start = comma + 1;
        }
    }
    std::optional<std::string> seed;
    if (!a.seed.empty()) {
        if (a.seed.size() > 10 || a.seed.find_first_not_of("0123456789") != std::string::npos ||
            std::stoull(a.seed) > 4294967295ULL)
            return usage_error("launch: --seed takes a whole number from 0 to 4294967295 (PYTHONHASHSEED's range)");
        seed = a.seed;
    }

    // The command every rank runs.
    std::vector<std::string> argv;
    if (a.no_python) {
        if (!on_path(words[0])) {
            std::fprintf(stderr, "baton: launch: cannot run %s: not found or not executable\n",
                         escaped_line(words[0]).c_str());
            return 127;
        }
        argv = words;
    } else {
        if (!on_path(a.python)) {
            std::fprintf(stderr, "baton: launch: cannot run %s: not found (name a Python with --python)\n",
                         escaped_line(a.python).c_str());
            return 127;
        }
        argv = {a.python, "-u"};
        if (a.module) {
            argv.push_back("-m");
        } else if (access(words[0].c_str(), R_OK) != 0) {
            std::fprintf(stderr, "baton: launch: cannot open the script %s: %s\n", escaped_line(words[0]).c_str(),
                         std::strerror(errno));
            return 127;
        }
        argv.insert(argv.end(), words.begin(), words.end());
    }

    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    Result<SamplerOptions> sampler = sampler_options(*cfg, "", "", a.no_gpus);
    if (!sampler.ok()) return runtime_error(sampler.error().message);

    // The machine's GPUs (a cheap snapshot: no processes) for the rank count and the checks.
    Snapshot machine;
    if (!a.no_gpus) {
        SamplerOptions so = *sampler;
        so.processes = false;
        so.priming_seconds = 0;
        Sampler(so).take(machine);
    }
    const std::vector<std::string> gpus = visible_gpus(env_var, machine);
    if (a.nproc_per_node == "gpu" || a.nproc_per_node == "auto") {
        if (!gpus.empty()) {
            t.nproc_per_node = static_cast<int>(gpus.size());
        } else if (a.nproc_per_node == "gpu") {
            return runtime_error("launch: --nproc-per-node gpu, but no GPU is visible" +
                                 std::string(a.no_gpus                    ? " (--no-gpus)"
                                             : machine.gpu_status.empty() ? ""
                                                                          : " (" + machine.gpu_status + ")"));
        } else {
            t.nproc_per_node = static_cast<int>(usable_cpus());
        }
    } else {
        const std::optional<int> n = whole_number(a.nproc_per_node, 1024);
        if (!n || *n < 1)
            return usage_error("launch: --nproc-per-node takes a number from 1 to 1024, 'gpu' or 'auto', not '" +
                               a.nproc_per_node + "'");
        t.nproc_per_node = *n;
    }
    WorkerExtras extras;
    extras.cpus = usable_cpus();
    extras.seed = seed;
    if (a.nccl_debug_given) extras.nccl_debug = a.nccl_debug;
    if (a.bind_gpus) {
        if (gpus.empty()) return runtime_error("launch: --bind-gpus, but no GPU is visible");
        if (static_cast<std::size_t>(t.nproc_per_node) > gpus.size())
            return runtime_error(
                fmt::format("launch: --bind-gpus gives each rank its own GPU, but {} ranks would "
                            "share {} GPU{}: two ranks on one GPU (use --nproc-per-node gpu)",
                            t.nproc_per_node, gpus.size(), gpus.size() == 1 ? "" : "s"));
        extras.gpus.assign(gpus.begin(), gpus.begin() + t.nproc_per_node);
    } else if (!gpus.empty() && static_cast<std::size_t>(t.nproc_per_node) > gpus.size()) {
        std::fprintf(stderr, "baton launch: warning: %d ranks on %zu GPU%s: ranks will share GPUs\n", t.nproc_per_node,
                     gpus.size(), gpus.size() == 1 ? "" : "s");
    }

    // The master port: free on this node when rank 0's store is to listen here.
    if (a.master_port.empty() || a.master_port == "auto") {
        if (slurm_fills) {
            // derived from the job id: the same on every node
        } else if (t.nnodes == 1) {
            Result<int> port = pick_free_port();
            if (!port.ok()) return runtime_error("launch: " + port.error().message);
            t.master_port = *port;
        } else if (a.master_port == "auto") {
            return usage_error("launch: --master-port auto needs one node (or Slurm): name the port every node uses");
        } else {
            t.master_port = 29500;
        }
    } else {
        const std::optional<int> port = whole_number(a.master_port, 65535);
        if (!port || *port < 1) return usage_error("launch: --master-port takes 1 to 65535 or 'auto'");
        t.master_port = *port;
    }
    if (t.node_rank == 0) {
        const Status free = check_port_free(t.master_port);
        if (!free.ok()) return runtime_error("launch: " + free.error().message);
    }
    std::vector<PreflightNote> notes = check_launch_environment(env_var, read_interfaces());
    if (!a.no_python && !machine.gpus.empty()) {
        const std::vector<PreflightNote> torch = check_torch_against_driver(
            machine, cached_torch_probe(a.python, machine.gpu_driver_version.value_or(""), default_cache_dir(), 20),
            t.nproc_per_node);
        notes.insert(notes.end(), torch.begin(), torch.end());
    }
    print_notes(notes);
    for (const PreflightNote& n : notes)
        if (n.error) return runtime_error("launch: " + n.text);

    LaunchOptions o;
    o.topology = t;
    o.argv = argv;
    o.extras = extras;
    o.log_dir = a.log_dir.empty() ? default_log_dir() : a.log_dir;
    if (!cfg->launch_log_group.empty()) {
        const group* g = getgrnam(cfg->launch_log_group.c_str());
        if (!g) return runtime_error("launch: [launch] log_group '" + cfg->launch_log_group + "' is no group here");
        o.log_group = g->gr_gid;
    }
    o.tee = a.tee;
    o.console_ranks = console_ranks;
    o.grace_seconds = a.grace;
    o.name = a.name;
    o.interval_seconds = a.interval;
    o.quiet = a.quiet;
    o.sampler = *sampler;
    o.thresholds = cfg->thresholds;
    if (!a.no_db) {
        Result<std::string> db = history_path(a.db, config_path);
        if (!db.ok()) return runtime_error(db.error().message);
        o.db_path = *db;
    }
    Result<LaunchResult> launched = run_launch(o);
    if (!launched.ok()) return start_failure(launched.error().context("launch"));
    const LaunchResult& r = *launched;
    std::string summary;
    if (r.failure && !r.stop_signal) summary += root_cause_text(*r.failure);
    summary += "\n" + run_summary_text(r.stats, "baton launch");
    summary += fmt::format("  {} rank{} on this node ({} of {} in all), {} attempt{}, logs in {}\n", t.nproc_per_node,
                           t.nproc_per_node == 1 ? "" : "s", t.nproc_per_node, t.world_size(), r.attempts,
                           r.attempts == 1 ? "" : "s", r.run_dir);
    for (const StuckProcess& s : r.stuck)
        summary +=
            fmt::format("  pid {} ({}) is still there after SIGKILL, in state {}{}: not waited for\n", s.pid, s.name,
                        s.state, s.state == 'D' ? " (waiting in the kernel: a driver or a network file system)" : "");
    summary += write_run_outputs(r.stats, o.db_path, a.report, a.summary_json, "launch");
    std::fputs(printable_text(summary).c_str(), stderr);
    return r.exit_status;
}

}  // namespace baton::cli
