#include "cli/cmd_doctor.hpp"

#include <csignal>
#include <map>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_common.hpp"
#include "core/config.hpp"
#include "doctor/checks.hpp"
#include "doctor/facts.hpp"
#include "doctor/health.hpp"
#include "core/files.hpp"
#include "sample/linux/proc_stat.hpp"
#include "sample/sampler.hpp"
#include "queue/job_cgroup.hpp"
#include "queue/protocol.hpp"
#include "queue/pool_view.hpp"
#include "queue/queue_client.hpp"
#include "report/doctor_view.hpp"

namespace baton::cli {

CLI::App* add_doctor_command(CLI::App& app, DoctorArgs& a) {
    CLI::App* cmd =
        app.add_subcommand("doctor", "Check the environment: driver, CUDA, PyTorch, GPUs, limits, variables");
    cmd->add_flag("--json", a.json, "The checklist as one JSON object");
    a.python_option =
        cmd->add_option("--python", a.python, "Python interpreter to ask about PyTorch (default python3 on PATH)");
    cmd->add_flag("--no-torch", a.no_torch, "Do not start Python (the PyTorch checks are skipped)");
    add_duration_option(cmd, "--timeout", a.timeout,
                        "How long to wait for Python to import torch, 1 s to 600 s (default 20s)", 1, 600);
    cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML");
    cmd->add_option("--proc-root", a.proc_root, "Read /proc from this directory");
    cmd->add_option("--sys-root", a.sys_root, "Read /sys from this directory");
    CLI::Option* health =
        cmd->add_flag("--health", a.health,
                      "Whether this node should take GPU work (XIDs, ECC, row remaps, PCIe, lost GPUs): exit 1 "
                      "and one line per failing check; for a Slurm HealthCheckProgram or a readiness probe");
    a.expect_gpus_option =
        cmd->add_option("--expect-gpus", a.expect_gpus, "With --health: fail unless the driver finds exactly N GPUs")
            ->check(CLI::Range(0, 4096))
            ->needs(health);
    a.kernel_log_option =
        cmd->add_option("--kernel-log", a.kernel_log,
                        "With --health: where the XIDs since boot are read (default /dev/kmsg; or a dmesg, journalctl "
                        "-k or kern.log text file)")
            ->needs(health);
    for (CLI::Option* o : {a.python_option, cmd->get_option("--no-torch"), cmd->get_option("--timeout")})
        o->excludes(health);
    return cmd;
}

namespace {

// The queue's agent, asked over its socket; without one, what an agent started from here would get.
doctor::QueueFacts queue_facts() {
    doctor::QueueFacts q;
    const std::map<std::string, std::string> env = environment_variables();
    Result<int> fd = queue::connect_agent(env);
    if (fd.ok()) {
        queue::Request r;
        r.op = queue::Op::info;
        Result<queue::Reply> reply = queue::call(*fd, r, 10);
        ::close(*fd);
        const nlohmann::json j = reply.ok() ? nlohmann::json::parse(reply->line, nullptr, false) : nlohmann::json();
        if (j.is_object() && j.value("ok", false)) {
            q.agent = true;
            q.socket = j.value("socket", "");
            q.cgroups = j.value("cgroups", "");
            q.job_cgroups = j.value("job_cgroups", false);
            if (j.contains("pool")) {
                if (Result<queue::PoolView> pool = queue::parse_pool_view(j["pool"]); pool.ok()) {
                    std::string order;
                    for (const queue::PoolView::Gpu& g : pool->gpus) {
                        order += (order.empty() ? "" : ", ") + std::to_string(g.index);
                        q.gpus_free += g.jobs.empty() && g.foreign.empty() ? 1 : 0;
                    }
                    q.gpus = order;
                    q.gpus_count = static_cast<unsigned>(pool->gpus.size());
                    if (!pool->gpus_known) q.gpus_problem = pool->problem.empty() ? "unknown" : pool->problem;
                }
            }
            return q;
        }
    }
    q.socket = queue::own_socket_path(env).value_or("");
    Result<queue::CgroupPlace> place = queue::find_delegated_cgroup();
    q.cgroups =
        place.ok() ? "a cgroup per job under " + place->dir + "/jobs" : "CPU affinity only: " + place.error().message;
    return q;
}

// When the kernel booted, to show its log's times as wall-clock times.
std::optional<double> boot_unix_seconds(const std::string& proc_root) {
    const std::optional<std::string> stat = read_small_file((proc_root.empty() ? "/proc" : proc_root) + "/stat");
    if (!stat) return std::nullopt;
    os::ProcStat s;
    os::parse_proc_stat(*stat, s);
    if (!s.boot_time_seconds) return std::nullopt;
    return static_cast<double>(*s.boot_time_seconds);
}

// What stops --health from judging: exit 2, never 1, which would drain a healthy node (Slurm's
// wrapper and node-problem-detector read 2 as "unknown").
int health_unknown(const std::string& message) {
    runtime_error(message);
    return kExitUsage;
}

int run_health(const DoctorArgs& a, const std::string& config_path) {
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return health_unknown(cfg.error().message);
    Result<SamplerOptions> sampler = sampler_options(*cfg, a.proc_root, a.sys_root, a.no_gpus);
    if (!sampler.ok()) return health_unknown(sampler.error().message);
    // The GPUs only, read once: a health check runs every few minutes on every node and must be quick.
    sampler->processes = false;
    sampler->priming_seconds = 0.01;
    doctor::HealthFacts f;
    {
        Sampler s(*sampler);
        s.take(f.snapshot);
    }
    if (a.expect_gpus_option->count() > 0) f.expect_gpus = a.expect_gpus;
    Result<std::vector<doctor::KernelXid>> xids = doctor::read_kernel_xids(a.kernel_log);
    if (xids.ok())
        f.kernel_xids = std::move(*xids);
    else if (a.kernel_log_option->count() > 0)
        return health_unknown(xids.error().message);  // the file named is not there: a mistake to say
    else
        f.kernel_log_error = xids.error().message;  // /dev/kmsg closed to this user: said, the rest judged
    f.boot_unix_seconds = boot_unix_seconds(a.proc_root);
    const std::vector<doctor::CheckItem> items = doctor::health_checks(f);
    std::string out;
    if (a.json) {
        report::append_doctor_json(items, out);
        out.push_back('\n');
    } else {
        report::append_health_text(items, f.snapshot.gpus.size(), out);
    }
    write_stdout(out);
    return report::doctor_exit_status(items);
}

}  // namespace

int run_doctor(const DoctorArgs& a, const std::string& config_path) {
    std::signal(SIGPIPE, SIG_IGN);
    if (a.health) return run_health(a, config_path);
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    doctor::GatherOptions o;
    Result<SamplerOptions> sampler = sampler_options(*cfg, a.proc_root, a.sys_root, a.no_gpus);
    if (!sampler.ok()) return runtime_error(sampler.error().message);
    o.sampler = *sampler;
    o.python = a.python;
    o.python_asked = a.python_option->count() > 0;
    o.probe_torch = !a.no_torch;
    o.python_timeout_seconds = a.timeout;
    doctor::DoctorFacts facts = gather_facts(o);
    facts.queue = queue_facts();
    facts.config = doctor::config_facts(config_path, *cfg);
    const std::vector<doctor::CheckItem> items = doctor::run_checks(facts);
    std::string out;
    if (a.json) {
        report::append_doctor_json(items, out);
        out.push_back('\n');
    } else {
        report::append_doctor_text(items, out);
    }
    write_stdout(out);
    return report::doctor_exit_status(items);
}

}  // namespace baton::cli
