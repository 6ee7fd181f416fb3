#include "cli/cmd_bench.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>

#include "measure/bench_need.hpp"
#include "measure/bench_record.hpp"
#include "measure/bench_suite.hpp"
#include "cli/cli_common.hpp"
#include "core/clock.hpp"
#include "store/history.hpp"

namespace baton::cli {

namespace {

void add_memory(CLI::App* cmd, BenchArgs& a) {
    measure::BenchRequest& r = a.request;
    a.memory = cmd->add_subcommand("memory",
                                   "Host memory bandwidth: STREAM copy and triad, threads up to the CPUs, "
                                   "each NUMA node alone");
    a.memory->add_option("--threads", r.threads, "At most this many threads (default: every CPU baton may use)")
        ->check(CLI::Range(1, 4096));
}

void add_disk(CLI::App* cmd, BenchArgs& a) {
    measure::BenchRequest& r = a.request;
    a.disk = cmd->add_subcommand("disk",
                                 "Read throughput of the storage under PATH, cold and cached, against what "
                                 "a training job needs");
    a.disk->add_option("path", r.path, "A directory (a test file is written there and removed) or a file to read")
        ->required();
    a.disk->add_option("--size", r.size, "Size of the test file (default 1G; binary units: 512M, 4G)");
    auto* need = a.disk->add_option("--need", r.need, "The read rate the job needs, e.g. 2GB/s (decimal units)");
    a.disk
        ->add_option("--need-from-run", r.need_from_run,
                     "The read rate a recorded run needed: the p95 of its disk reads (baton runs lists the runs)")
        ->excludes(need);
    add_duration_option(a.disk, "--seconds-per-test", r.seconds_per_test,
                        "Each of the four tests stops after this long (default 5s)", 0.1, 600);
}

void add_net(CLI::App* cmd, BenchArgs& a) {
    measure::BenchRequest& r = a.request;
    a.net = cmd->add_subcommand("net",
                                "TCP throughput to another baton (bench net --listen there) against the "
                                "interface's speed");
    auto* listen = a.net
                       ->add_option("--listen", r.listen,
                                    "Serve tests on ADDRESS:PORT (default 0.0.0.0:5301; :0 picks a free port)")
                       ->expected(0, 1);
    auto* connect = a.net->add_option("--connect", r.connect, "Measure to HOST[:PORT] (default port 5301)");
    listen->excludes(connect);
    a.net->add_flag("--once", r.once, "With --listen: end after one test");
    a.net->add_option("--streams", r.streams, "Parallel TCP streams (default 4)")->check(CLI::Range(1, 128));
    add_duration_option(a.net, "--seconds", r.seconds, "How long to send (default 10s)", 0.1, 3600);
}

void add_h2d(CLI::App* cmd, BenchArgs& a) {
    measure::BenchRequest& r = a.request;
    a.h2d = cmd->add_subcommand("h2d",
                                "Copies between host and GPU (pinned and pageable) and on the GPU, 4 KiB to "
                                "1 GiB, against the PCIe link's peak (CUDA driver API, loaded at run time)");
    a.h2d->add_option("--gpu", r.gpu, "Only this GPU (its index, as baton top numbers them; default: every GPU)")
        ->check(CLI::Range(0, 1023));
    a.h2d->add_option("--max-size", r.max_size, "The largest copy (default 1G; binary units)");
    add_duration_option(a.h2d, "--deadline", r.deadline,
                        "Give up on a driver call that has not returned after this long (default 30s)", 0.1, 3600);
}

void add_allreduce(CLI::App* cmd, BenchArgs& a) {
    measure::BenchRequest& r = a.request;
    a.allreduce = cmd->add_subcommand("allreduce",
                                      "NCCL collectives between the local GPUs from one process, 8 B "
                                      "to 1 GiB, with nccl-tests' algbw and busbw and its columns");
    a.allreduce->add_option("--gpus", r.gpus, "The first N GPUs (default: every GPU)")->check(CLI::Range(2, 1024));
    a.allreduce->add_option("--op", r.op, "all_reduce (default), all_gather, reduce_scatter or broadcast")
        ->check(CLI::IsMember({"all_reduce", "all_gather", "reduce_scatter", "broadcast"}));
    a.allreduce->add_option("--max-size", r.max_size, "The largest collective (default 1G; binary units)");
    a.allreduce->add_option("--iters", r.iters, "Timed iterations per size (default 20, as nccl-tests -n)")
        ->check(CLI::Range(1, 10000));
    a.allreduce->add_option("--warmup", r.warmup, "Warm-up iterations per size (default 5, as nccl-tests -w)")
        ->check(CLI::Range(0, 10000));
    a.allreduce->add_option("--python", r.python,
                            "The Python whose PyTorch ships NCCL, when libnccl.so.2 is not on the loader's path "
                            "(default python3)");
    add_duration_option(a.allreduce, "--deadline", r.deadline,
                        "Give up on a driver or NCCL call that has not returned after this long (default 30s)", 0.1,
                        3600);
}

void add_scaling(CLI::App* cmd, BenchArgs& a) {
    measure::BenchRequest& r = a.request;
    a.scaling = cmd->add_subcommand("scaling",
                                    "Train through baton launch at each size for a fixed time and print "
                                    "the weak-scaling efficiency: baton bench scaling --gpus 1,2,4,8 -- "
                                    "train.py ARGS");
    a.scaling->add_option("--gpus", r.sizes, "The sizes: ranks per run, e.g. 1,2,4,8")->required();
    add_duration_option(a.scaling, "--seconds", r.train_seconds, "How long each size trains (default 60s)", 1, 86400);
    add_duration_option(a.scaling, "--warmup", r.warmup_seconds,
                        "What each size does first and is not counted (default: a quarter of --seconds)", 0, 86400);
    a.scaling->add_option("--metric-regex", r.metric_regex,
                          "Read the throughput from the ranks' output: the first group of this regex (ECMAScript), "
                          "e.g. 'samples/s: ([0-9.]+)' (default: the Python hook's steps)");
    a.scaling->add_flag("--no-gpus,--no-gpu-check", r.no_gpus, "CPU ranks: baton launch --no-gpus");
    a.scaling->add_option("--python", r.python, "The Python that runs the script (default: python3 on PATH)");
    a.scaling->add_flag("-m,--module", r.module, "Run the first word as a Python module (python -m MODULE)");
    a.scaling->add_flag("--no-python", r.no_python, "Run the first word as a program, not a Python script");
    a.scaling->add_option("--work-dir", r.work_dir,
                          "Where the launches' logs and steps go (default: a new directory under "
                          "$XDG_STATE_HOME/baton/scaling)");
    a.scaling->footer("Usage: baton bench scaling --gpus 1,2,4,8 [OPTIONS] -- SCRIPT.py [ARGS...]");
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, BenchArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "bench",
        "Measure each link of this box (memory, disk, GPU copies, NCCL, network) against the peak its hardware "
        "promises, with a verdict; and scaling over GPUs. No subcommand: every bench that applies, in about a minute");
    cmd->require_subcommand(0, 1);
    cmd->fallthrough();  // --json, --db, ... may follow the subcommand
    cmd->add_flag("--json", a.json, "One JSON object (docs/bench.md)");
    cmd->add_option("--db", a.db,
                    "History database the results go to (default: [history] db in the config, else "
                    "$XDG_STATE_HOME/baton/baton.db)");
    cmd->add_flag("--no-db", a.no_db, "Do not record the results in the history");
    cmd->add_option("--name", a.name, "Name of the record in the history (default: bench and the subcommand)");
    cmd->add_option("--path", a.request.path,
                    "No subcommand: the directory the disk bench writes its test file in "
                    "(default: the current directory)");
    add_memory(cmd, a);
    add_disk(cmd, a);
    add_net(cmd, a);
    add_h2d(cmd, a);
    add_allreduce(cmd, a);
    add_scaling(cmd, a);
    return cmd;
}

namespace {

std::atomic<bool> g_stop{false};

void on_stop_signal(int) {
    g_stop.store(true);
}

// SIGINT and SIGTERM end the net server between tests and scaling's launch in progress.
void stop_on_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

std::string host_name() {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    return host;
}

std::string current_dir() {
    std::error_code ec;
    return std::filesystem::current_path(ec).string();
}

// Records the reports as one bench in the history; a note on stderr when that fails (the
// figures were printed: the bench itself did not fail).
void record(const BenchArgs& a, const std::string& config_path, const std::string& what, std::int64_t start_ms,
            const std::vector<measure::BenchReport>& reports, const std::string& text) {
    if (a.no_db) return;
    Result<std::string> path = history_path(a.db, config_path);
    Result<std::int64_t> id =
        path.ok() ? measure::record_bench(
                        *path, {what, a.name, current_dir(), host_name(), start_ms, unix_millis(), text}, reports)
                  : Result<std::int64_t>(path.error());
    if (!id.ok())
        std::fprintf(stderr, "baton: bench not recorded: %s\n", id.error().message.c_str());
    else if (!a.json)
        std::printf("recorded as run %lld (baton runs show %lld; baton compare %lld LATER_ID)\n",
                    static_cast<long long>(*id), static_cast<long long>(*id), static_cast<long long>(*id));
}

int print(const BenchArgs& a, const std::string& config_path, const std::string& what, std::int64_t start_ms,
          const measure::BenchReport& r) {
    const std::string text = measure::report_text(r);
    if (!write_stdout(a.json ? measure::report_json(r) : text)) return kExitFailure;
    record(a, config_path, what, start_ms, {r}, text);
    return kExitOk;
}

// One bench's result: printed and recorded, or its error as "bench WHAT: ..." (exit 1).
int finish(const BenchArgs& a, const std::string& config_path, const std::string& what, std::int64_t start_ms,
           const Result<measure::BenchReport>& r) {
    if (!r.ok()) return runtime_error("bench " + what + ": " + r.error().message);
    return print(a, config_path, what, start_ms, *r);
}

int run_net(const BenchArgs& a, const measure::BenchSettings& s, const std::string& config_path,
            std::int64_t start_ms) {
    if (measure::net_needs_a_side(a.request))
        return usage_error("bench net: give --listen [ADDRESS:PORT] on one machine and --connect HOST on the other");
    if (a.request.listen_given) {
        Result<ListenAddress> listen = measure::plan_net_listen(a.request);
        if (!listen.ok()) return error_exit(listen.error());
        measure::NetServerOptions o;
        o.listen = *listen;
        o.once = a.request.once;
        o.stop = &g_stop;
        o.say = [](const std::string& line) {
            std::printf("%s\n", line.c_str());
            std::fflush(stdout);
        };
        stop_on_signals();
        Status served = measure::run_net_server(o);
        return served.ok() ? kExitOk : runtime_error(served.error().message);
    }
    Result<measure::NetClientOptions> o = measure::plan_net_client(a.request, s);
    if (!o.ok()) return error_exit(o.error());
    return finish(a, config_path, "net", start_ms, measure::run_net_client(*o));
}

int run_scaling(const BenchArgs& a, const measure::BenchSettings& s, const std::vector<std::string>& command,
                const std::string& config_path, std::int64_t start_ms) {
    std::error_code ec;
    const std::string baton = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    Result<measure::ScalingOptions> o = measure::plan_scaling(
        a.request, s, command, baton, state_file("scaling", config_path), start_ms, static_cast<int>(::getpid()));
    if (!o.ok()) return error_exit(o.error());
    if (ec) return runtime_error("cannot find the baton binary: /proc/self/exe: " + ec.message());
    stop_on_signals();
    o->stop = &g_stop;
    return finish(a, config_path, "scaling", start_ms, measure::run_scaling_bench(*o));
}

int run_disk(const BenchArgs& a, const measure::BenchSettings& s, const std::string& config_path,
             std::int64_t start_ms) {
    Result<measure::DiskBenchOptions> o = measure::plan_disk(a.request, s);
    if (!o.ok()) return error_exit(o.error());
    Result<measure::DiskNeed> need =
        measure::disk_need(a.request.need, a.request.need_from_run, [&] { return open_history(a.db, config_path); });
    if (!need.ok()) return usage_error("bench disk: " + need.error().message);
    o->need = need->bytes_per_second;
    o->need_source = need->source;
    return finish(a, config_path, "disk", start_ms, measure::run_disk_bench(*o));
}

// No subcommand: every bench that applies, quickly, then one summary table.
int run_quick_suite(const BenchArgs& a, const measure::BenchSettings& s, const std::string& config_path,
                    std::int64_t start_ms) {
    const std::string disk_path = a.request.path.empty() ? current_dir() : a.request.path;
    const std::vector<measure::BenchReport> reports =
        measure::run_quick_suite(measure::plan_quick_suite(s, disk_path, a.request.deadline));
    const std::string text = measure::summary_text(reports);
    if (!write_stdout(a.json ? measure::summary_json(reports) : text)) return kExitFailure;
    record(a, config_path, "", start_ms, reports, text);
    return kExitOk;
}

}  // namespace

int run_bench(const BenchArgs& given, const std::vector<std::string>& command, const std::string& config_path) {
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    Result<SamplerOptions> so = sampler_options(*cfg, "", "", false);
    if (!so.ok()) return runtime_error(so.error().message);
    const measure::BenchSettings s = measure::bench_settings(*cfg, *so);
    const std::int64_t start_ms = unix_millis();
    BenchArgs a = given;
    a.request.listen_given = a.net->count("--listen") > 0;
    a.request.python_given = a.scaling->count("--python") > 0;

    if (a.net->parsed()) return run_net(a, s, config_path, start_ms);
    if (a.scaling->parsed()) return run_scaling(a, s, command, config_path, start_ms);
    if (a.disk->parsed()) return run_disk(a, s, config_path, start_ms);
    if (a.memory->parsed())
        return print(a, config_path, "memory", start_ms, measure::run_memory_bench(measure::plan_memory(a.request, s)));
    if (a.h2d->parsed()) {
        Result<measure::H2dOptions> o = measure::plan_h2d(a.request, s);
        if (!o.ok()) return error_exit(o.error());
        return finish(a, config_path, "h2d", start_ms, measure::run_h2d_bench(*o));
    }
    if (a.allreduce->parsed()) {
        Result<measure::AllreduceOptions> o = measure::plan_allreduce(a.request, s);
        if (!o.ok()) return error_exit(o.error());
        return finish(a, config_path, "allreduce", start_ms, measure::run_allreduce_bench(*o));
    }
    return run_quick_suite(a, s, config_path, start_ms);
}

}  // namespace baton::cli
