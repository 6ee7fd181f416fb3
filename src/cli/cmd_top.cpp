#include "cli/cmd_top.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "core/config.hpp"
#include "cli/top_hosts.hpp"
#include "ui/top_app.hpp"

namespace baton::cli {

namespace {

const std::pair<const char*, ui::SortKey> kSorts[] = {
    {"gpu-memory", ui::SortKey::gpu_memory},
    {"cpu", ui::SortKey::cpu},
    {"rss", ui::SortKey::memory},
    {"pid", ui::SortKey::pid},
    {"io", ui::SortKey::io},
    {"user", ui::SortKey::user},
    {"command", ui::SortKey::command},
};

bool env_set(const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
}

}  // namespace

CLI::App* add_top_command(CLI::App& app, TopArgs& a) {
    CLI::App* cmd = app.add_subcommand("top", "Live view of GPUs, CPU, memory, disks, network and processes");
    add_duration_option(cmd, "-d,--delay", a.delay, "Time between refreshes, 0.1 s to 1h (default 1s)", 0.1, 3600);
    cmd->add_flag("--once", a.once, "Print one frame as plain text and exit");
    cmd->add_option("--width", a.width, "Frame width in columns (default: the terminal's, else 80)")
        ->check(CLI::Range(20, 1000));
    cmd->add_option("--height", a.height, "Frame height in lines (default: the terminal's, else 24)")
        ->check(CLI::Range(5, 10000));
    cmd->add_option("--count", a.count,
                    "Batch mode (not a terminal, or TERM=dumb): frames to print, 0 = until interrupted")
        ->check(CLI::Range(0, 100000000));
    cmd->add_flag("--ascii", a.ascii, "ASCII bars and tree lines instead of Unicode");
    cmd->add_flag("-t,--tree", a.tree, "Start in tree mode");
    cmd->add_flag("-g,--gpu-only", a.gpu_only, "Start showing only processes on a GPU");
    cmd->add_flag("--kernel-threads", a.kernel_threads, "Start showing kernel threads (hidden by default; K toggles)");
    std::vector<std::string> names;
    for (const auto& [n, k] : kSorts) names.emplace_back(n);
    cmd->add_option("-s,--sort", a.sort, "Initial sort column (default gpu-memory)")->check(CLI::IsMember(names));
    cmd->add_option("--filter", a.filter, "Initial filter text (command, user or pid)");
    cmd->add_option("--columns", a.columns,
                    "The process table's columns besides PID and COMMAND, e.g. user,state,gpu,gmem,gmem_share,sm,cpu,"
                    "rss,io,threads,age (default: [top] columns, else user,gpu,gmem,sm,cpu,rss,io)");
    auto* no_gpus = cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML");
    auto* proc =
        cmd->add_option("--proc-root", a.proc_root, "Read /proc from this directory (default /proc, or config)");
    auto* sys = cmd->add_option("--sys-root", a.sys_root, "Read /sys from this directory (default /sys, or config)");
    cmd->add_flag("--mark-styles", a.mark_styles, "With --once: mark each styled span as {style}text{/} (for tests)");
    auto* hosts = cmd->add_option("--hosts", a.hosts,
                                  "HOST[:PORT],...: one screen of these hosts' agents (baton serve), each asked every "
                                  "--delay on its own deadline (default [top] hosts; port default: [serve] listen's)");
    hosts->check([](const std::string& v) { return v.empty() ? std::string("no host given") : std::string(); });
    hosts->excludes(no_gpus)->excludes(proc)->excludes(sys);
    auto* local = cmd->add_flag("--local", a.local, "This machine's view, whatever [top] hosts says");
    local->excludes(hosts);
    cmd->add_option("--token-file", a.token_file,
                    "With hosts: the agents' bearer token (default [top] token_file, else [serve] token_file)")
        ->excludes(local);
    add_duration_option(cmd, "--timeout", a.timeout_seconds,
                        "With hosts: how long one ask of a host may take (default 2s; 0.1s to 60s)", 0.1, 60)
        ->excludes(local);
    cmd->add_flag("--free-gpus", a.free_gpus, "With hosts: start showing free GPUs only (g toggles)")->excludes(local);
    return cmd;
}

int run_top(const TopArgs& a, const std::string& config_path) {
    if (!std::isfinite(a.delay)) return usage_error("--delay: must be a finite number of seconds");
    if (a.mark_styles && !a.once) return usage_error("--mark-styles needs --once");
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    ui::TopOptions o;
    Result<SamplerOptions> sampler = sampler_options(*cfg, a.proc_root, a.sys_root, a.no_gpus);
    if (!sampler.ok()) return runtime_error(sampler.error().message);
    o.sampler = *sampler;
    o.sampler.priming_seconds = std::min(0.5, a.delay);
    // As the agent: a process idle for 30 s is taken as idle between its full reads (every 5 s)
    // instead of having its schedstat read every tick, on ticks where nothing forked or exited.
    // Reading schedstat for hundreds of sleeping daemons is most of a live view's CPU; what it
    // gives up (a long-sleeping process that wakes shows its CPU up to 5 s late, its totals intact)
    // matters little on a screen. [sample] skip_idle_processes = false turns it off.
    o.sampler.trust_idle_after_seconds = 30;
    std::error_code ec;
    o.local_proc = std::filesystem::weakly_canonical(o.sampler.proc_root, ec) == "/proc";
    o.thresholds = cfg->thresholds;
    o.delay_seconds = a.delay;
    o.width = a.width;
    o.height = a.height;
    o.count = a.count;
    o.color = !env_set("NO_COLOR");  // https://no-color.org
    o.view.ascii = a.ascii;
    o.view.graphs = cfg->top.graphs;
    o.view.graph_glyphs = cfg->top.graph_symbols == "block" ? ui::GraphGlyphs::blocks : ui::GraphGlyphs::braille;
    o.history_seconds = cfg->top.history_seconds;
    if (!cfg->top.columns.empty()) {
        Result<ui::ColumnSet> c = ui::parse_columns(cfg->top.columns);
        if (!c.ok()) return runtime_error("config [top] columns: " + c.error().message);
        o.view.columns = *c;
    }
    if (a.columns) {
        Result<ui::ColumnSet> c = ui::parse_columns(*a.columns);
        if (!c.ok()) return usage_error("--columns: " + c.error().message);
        o.view.columns = *c;
    }
    o.view.tree = a.tree;
    o.view.gpu_only = a.gpu_only;
    o.view.kernel_threads = a.kernel_threads;
    o.view.filter = a.filter;
    for (const auto& [n, k] : kSorts)
        if (a.sort == n) o.view.sort = k;

    // Several hosts: --hosts, else [top] hosts unless this machine's view is asked for (--local, or a
    // flag that names this machine's /proc, /sys or NVML).
    const bool this_machine = a.local || a.no_gpus || !a.proc_root.empty() || !a.sys_root.empty();
    const std::string hosts = a.hosts ? *a.hosts : this_machine ? std::string() : cfg->top.hosts;
    if (!hosts.empty()) {
        ui::HostsOptions ho;
        ho.top = o;
        ho.view.ascii = a.ascii;
        ho.view.filter = a.filter;
        ho.view.free_only = a.free_gpus;
        return run_top_hosts({hosts, a.token_file, a.timeout_seconds, a.once, a.mark_styles}, *cfg, std::move(ho));
    }
    if (a.token_file.size() || a.free_gpus || a.timeout_seconds != 2)
        return usage_error("--token-file, --timeout and --free-gpus are for several hosts (--hosts or [top] hosts)");
    if (a.once) return write_stdout(ui::top_once(o, a.mark_styles)) ? kExitOk : kExitOk;
    const char* term = std::getenv("TERM");
    const bool dumb = !term || !*term || std::strcmp(term, "dumb") == 0;
    if (dumb || !isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) return ui::run_top_batch(o);
    const Result<int> rc = ui::run_top_interactive(o);
    return rc.ok() ? *rc : runtime_error(rc.error().message);
}

}  // namespace baton::cli
