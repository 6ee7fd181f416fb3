#include "cli/cmd_bench.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <regex>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "bench/allreduce_bench.hpp"
#include "bench/disk_bench.hpp"
#include "bench/h2d_bench.hpp"
#include "bench/memory_bench.hpp"
#include "bench/net_bench.hpp"
#include "bench/scaling_bench.hpp"
#include "cli/cli_common.hpp"
#include "core/clock.hpp"
#include "core/percentile.hpp"
#include "core/units.hpp"
#include "store/history.hpp"

namespace baton::cli {

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
    cmd->add_option("--path", a.path,
                    "No subcommand: the directory the disk bench writes its test file in "
                    "(default: the current directory)");

    a.memory = cmd->add_subcommand("memory",
                                   "Host memory bandwidth: STREAM copy and triad, threads up to the CPUs, "
                                   "each NUMA node alone");
    a.memory->add_option("--threads", a.threads, "At most this many threads (default: every CPU baton may use)")
        ->check(CLI::Range(1, 4096));

    a.disk = cmd->add_subcommand("disk",
                                 "Read throughput of the storage under PATH, cold and cached, against what "
                                 "a training job needs");
    a.disk->add_option("path", a.path, "A directory (a test file is written there and removed) or a file to read")
        ->required();
    a.disk->add_option("--size", a.size, "Size of the test file (default 1G; binary units: 512M, 4G)");
    auto* need = a.disk->add_option("--need", a.need, "The read rate the job needs, e.g. 2GB/s (decimal units)");
    a.disk
        ->add_option("--need-from-run", a.need_from_run,
                     "The read rate a recorded run needed: the p95 of its disk reads (baton runs lists the runs)")
        ->excludes(need);
    add_duration_option(a.disk, "--seconds-per-test", a.seconds_per_test,
                        "Each of the four tests stops after this long (default 5s)", 0.1, 600);

    a.net = cmd->add_subcommand("net",
                                "TCP throughput to another baton (bench net --listen there) against the "
                                "interface's speed");
    auto* listen = a.net
                       ->add_option("--listen", a.listen,
                                    "Serve tests on ADDRESS:PORT (default 0.0.0.0:5301; :0 picks a free port)")
                       ->expected(0, 1);
    auto* connect = a.net->add_option("--connect", a.connect, "Measure to HOST[:PORT] (default port 5301)");
    listen->excludes(connect);
    a.net->add_flag("--once", a.once, "With --listen: end after one test");
    a.net->add_option("--streams", a.streams, "Parallel TCP streams (default 4)")->check(CLI::Range(1, 128));
    add_duration_option(a.net, "--seconds", a.seconds, "How long to send (default 10s)", 0.1, 3600);

    a.h2d = cmd->add_subcommand("h2d",
                                "Copies between host and GPU (pinned and pageable) and on the GPU, 4 KiB to "
                                "1 GiB, against the PCIe link's peak (CUDA driver API, loaded at run time)");
    a.h2d->add_option("--gpu", a.gpu, "Only this GPU (its index, as baton top numbers them; default: every GPU)")
        ->check(CLI::Range(0, 1023));
    a.h2d->add_option("--max-size", a.max_size, "The largest copy (default 1G; binary units)");
    add_duration_option(a.h2d, "--deadline", a.deadline,
                        "Give up on a driver call that has not returned after this long (default 30s)", 0.1, 3600);

    a.allreduce = cmd->add_subcommand("allreduce",
                                      "NCCL collectives between the local GPUs from one process, 8 B "
                                      "to 1 GiB, with nccl-tests' algbw and busbw and its columns");
    a.allreduce->add_option("--gpus", a.gpus, "The first N GPUs (default: every GPU)")->check(CLI::Range(2, 1024));
    a.allreduce->add_option("--op", a.op, "all_reduce (default), all_gather, reduce_scatter or broadcast")
        ->check(CLI::IsMember({"all_reduce", "all_gather", "reduce_scatter", "broadcast"}));
    a.allreduce->add_option("--max-size", a.max_size, "The largest collective (default 1G; binary units)");
    a.allreduce->add_option("--iters", a.iters, "Timed iterations per size (default 20, as nccl-tests -n)")
        ->check(CLI::Range(1, 10000));
    a.allreduce->add_option("--warmup", a.warmup, "Warm-up iterations per size (default 5, as nccl-tests -w)")
        ->check(CLI::Range(0, 10000));
    a.allreduce->add_option("--python", a.python,
                            "The Python whose PyTorch ships NCCL, when libnccl.so.2 is not on the loader's path "
                            "(default python3)");
    add_duration_option(a.allreduce, "--deadline", a.deadline,
                        "Give up on a driver or NCCL call that has not returned after this long (default 30s)", 0.1,
                        3600);

    a.scaling = cmd->add_subcommand("scaling",
                                    "Train through baton launch at each size for a fixed time and print "
                                    "the weak-scaling efficiency: baton bench scaling --gpus 1,2,4,8 -- "
                                    "train.py ARGS");
    a.scaling->add_option("--gpus", a.sizes, "The sizes: ranks per run, e.g. 1,2,4,8")->required();
    add_duration_option(a.scaling, "--seconds", a.train_seconds, "How long each size trains (default 60s)", 1, 86400);
    add_duration_option(a.scaling, "--warmup", a.warmup_seconds,
                        "What each size does first and is not counted (default: a quarter of --seconds)", 0, 86400);
    a.scaling->add_option("--metric-regex", a.metric_regex,
                          "Read the throughput from the ranks' output: the first group of this regex (ECMAScript), "
                          "e.g. 'samples/s: ([0-9.]+)' (default: the Python hook's steps)");
    a.scaling->add_flag("--no-gpus,--no-gpu-check", a.no_gpus, "CPU ranks: baton launch --no-gpus");
    a.scaling->add_option("--python", a.python, "The Python that runs the script (default: python3 on PATH)");
    a.scaling->add_flag("-m,--module", a.module, "Run the first word as a Python module (python -m MODULE)");
    a.scaling->add_flag("--no-python", a.no_python, "Run the first word as a program, not a Python script");
    a.scaling->add_option("--work-dir", a.work_dir,
                          "Where the launches' logs and steps go (default: a new directory under "
                          "$XDG_STATE_HOME/baton/scaling)");
    a.scaling->footer("Usage: baton bench scaling --gpus 1,2,4,8 [OPTIONS] -- SCRIPT.py [ARGS...]");
    return cmd;
}

namespace {

std::atomic<bool> g_stop{false};

void on_stop_signal(int) {
    g_stop.store(true);
}

std::string host_name() {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    return host;
}

// Records the reports as one bench in the history; a note on stderr when that fails (the
// figures were printed: the bench itself did not fail).
void record(const BenchArgs& a, const std::string& config_path, const std::string& what, std::int64_t start_ms,
            const std::vector<bench::BenchReport>& reports, const std::string& text) {
    if (a.no_db) return;
    Result<std::string> path = history_path(a.db, config_path);
    if (!path.ok()) {
        std::fprintf(stderr, "baton: bench not recorded: %s\n", path.error().message.c_str());
        return;
    }
    Result<History> h = History::open(*path, HistoryAccess::record);
    if (!h.ok()) {
        std::fprintf(stderr, "baton: bench not recorded: %s\n", h.error().message.c_str());
        return;
    }
    std::vector<BenchLinkRecord> links;
    for (const bench::BenchReport& r : reports)
        for (const bench::LinkResult& l : r.links)
            links.push_back({r.bench, l.link, l.measured, l.peak, l.need, l.peak_source, l.verdict, l.detail, l.unit});
    std::error_code ec;
    const std::string cwd = std::filesystem::current_path(ec).string();
    const std::string label = what.empty() ? "bench" : "bench " + what;
    Result<std::int64_t> id = h->record_bench(a.name.empty() ? label : a.name, "baton " + label, cwd, host_name(),
                                              start_ms, unix_millis(), text, links);
    if (!id.ok())
        std::fprintf(stderr, "baton: bench not recorded: %s\n", id.error().message.c_str());
    else if (!a.json)
        std::printf("recorded as run %lld (baton runs show %lld; baton compare %lld LATER_ID)\n",
                    static_cast<long long>(*id), static_cast<long long>(*id), static_cast<long long>(*id));
}

int print(const BenchArgs& a, const std::string& config_path, const std::string& what, std::int64_t start_ms,
          const bench::BenchReport& r) {
    const std::string text = bench::report_text(r);
    if (!write_stdout(a.json ? bench::report_json(r) : text)) return kExitFailure;
    record(a, config_path, what, start_ms, {r}, text);
    return kExitOk;
}

// The need of --need or --need-from-run, with where it comes from; an error for bad input.
Result<std::optional<double>> disk_need(const BenchArgs& a, const std::string& config_path, std::string& source) {
    if (!a.need.empty()) {
        const std::optional<double> rate = parse_rate(a.need);
        if (!rate) return make_error("--need " + a.need + ": expected a rate such as 2GB/s, 500MB/s or 1.5GiB/s");
        source = "--need " + a.need;
        return std::optional<double>(rate);
    }
    if (a.need_from_run.empty()) return std::optional<double>();
    Result<std::int64_t> id = parse_run_id(a.need_from_run);
    if (!id.ok()) return id.error();
    Result<History> h = open_history(a.db, config_path);
    if (!h.ok()) return h.error();
    if (Result<RunRecord> run = h->run(*id); !run.ok()) return run.error();
    Result<std::vector<RunSample>> samples = h->samples(*id);
    if (!samples.ok()) return samples.error();
    std::vector<double> reads;
    for (const RunSample& s : *samples)
        if (s.disk_read_mb_s >= 0) reads.push_back(s.disk_read_mb_s * 1e6);
    if (reads.empty())
        return make_error(
            fmt::format("run {} recorded no disk reads (no samples, or recorded by an older baton)", *id));
    const double p95 = percentile(reads, 95);
    if (p95 < 1) return make_error(fmt::format("run {} read nothing from disk: nothing to measure against", *id));
    source = fmt::format("run {}: the p95 of its disk reads", *id);
    return std::optional<double>(p95);
}

// The summary goes on past a bench that cannot run here (no CUDA driver, a full disk): its row
// says why.
bench::BenchReport skipped_on_error(const std::string& name, Result<bench::BenchReport> r) {
    if (r.ok()) return std::move(*r);
    bench::BenchReport skipped;
    skipped.bench = name;
    skipped.skipped = true;
    skipped.links.push_back({name, 0, std::nullopt, "", std::nullopt, "skipped", r.error().message});
    return skipped;
}

}  // namespace

int run_bench(const BenchArgs& a, const std::vector<std::string>& command_words, const std::string& config_path) {
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    Result<SamplerOptions> so = sampler_options(*cfg, "", "", false);
    if (!so.ok()) return runtime_error(so.error().message);
    const std::int64_t start_ms = unix_millis();

    if (a.net->parsed()) {
        if (a.listen.empty() && a.connect.empty() && a.net->count("--listen") == 0)
            return usage_error(
                "bench net: give --listen [ADDRESS:PORT] on one machine and --connect HOST on the other");
        if (a.net->count("--listen") > 0) {
            Result<ListenAddress> listen =
                parse_listen_address(a.listen.empty() ? "0.0.0.0:" + std::to_string(bench::kNetDefaultPort) : a.listen);
            if (!listen.ok()) return usage_error("bench net --listen: " + listen.error().message);
            bench::NetServerOptions o;
            o.listen = *listen;
            o.once = a.once;
            o.stop = &g_stop;
            o.say = [](const std::string& line) {
                std::printf("%s\n", line.c_str());
                std::fflush(stdout);
            };
            struct sigaction sa {};
            sa.sa_handler = on_stop_signal;
            sigaction(SIGINT, &sa, nullptr);
            sigaction(SIGTERM, &sa, nullptr);
            Status s = bench::run_net_server(o);
            return s.ok() ? kExitOk : runtime_error(s.error().message);
        }
        Result<std::pair<std::string, int>> target = bench::parse_host_port(a.connect);
        if (!target.ok()) return usage_error("bench net " + target.error().message);
        bench::NetClientOptions o;
        o.host = target->first;
        o.port = target->second;
        o.streams = a.streams;
        o.seconds = a.seconds;
        o.sys_root = cfg->sys_root;
        o.ok_share = cfg->bench_ok_share;
        o.sampler = *so;
        Result<bench::BenchReport> r = bench::run_net_client(o);
        if (!r.ok()) return runtime_error("bench net: " + r.error().message);
        return print(a, config_path, "net", start_ms, *r);
    }
    if (a.h2d->parsed()) {
        bench::H2dOptions o;
        if (!a.max_size.empty()) {
            const std::optional<std::uint64_t> size = parse_size(a.max_size);
            if (!size || *size < 4096 || *size > (std::uint64_t{64} << 30))
                return usage_error("bench h2d --max-size " + a.max_size + ": expected 4K to 64G, e.g. 256M");
            o.max_size = *size;
            o.bytes_per_point = std::min<std::uint64_t>(o.bytes_per_point, 16 * *size);
        }
        o.gpu = a.gpu;
        o.deadline_seconds = a.deadline;
        o.ok_share = cfg->bench_ok_share;
        o.sys_root = cfg->sys_root;
        o.sampler = *so;
        Result<bench::BenchReport> r = bench::run_h2d_bench(o);
        if (!r.ok()) return runtime_error("bench h2d: " + r.error().message);
        return print(a, config_path, "h2d", start_ms, *r);
    }
    if (a.scaling->parsed()) {
        std::vector<std::string> command = command_words;
        if (!command.empty() && command.front() == "--") command.erase(command.begin());
        if (command.empty())
            return usage_error("bench scaling: no training given (baton bench scaling --gpus 1,2 -- train.py)");
        Result<std::vector<int>> sizes = bench::parse_sizes(a.sizes);
        if (!sizes.ok()) return usage_error("bench scaling " + sizes.error().message);
        bench::ScalingOptions o;
        o.sizes = *sizes;
        o.command = command;
        o.seconds = a.train_seconds;
        o.warmup_seconds = a.warmup_seconds < 0 ? a.train_seconds / 4 : a.warmup_seconds;
        if (o.warmup_seconds >= o.seconds) return usage_error("bench scaling: --warmup must be shorter than --seconds");
        o.metric_regex = a.metric_regex;
        if (!o.metric_regex.empty()) {
            try {
                std::regex check(o.metric_regex);
            } catch (const std::regex_error& e) {
                return usage_error("bench scaling --metric-regex: not a regular expression: " + std::string(e.what()));
            }
        }
        o.alarm = cfg->bench_scaling_alarm;
        if (a.no_gpus) o.launch_args.push_back("--no-gpus");
        if (a.module) o.launch_args.push_back("--module");
        if (a.no_python) o.launch_args.push_back("--no-python");
        if (a.scaling->count("--python") > 0) o.launch_args.insert(o.launch_args.end(), {"--python", a.python});
        std::error_code ec;
        o.baton = std::filesystem::read_symlink("/proc/self/exe", ec).string();
        if (ec) return runtime_error("cannot find the baton binary: /proc/self/exe: " + ec.message());
        o.work_dir = a.work_dir;
        if (o.work_dir.empty()) {
            Result<std::string> db = history_path("", config_path);
            const std::filesystem::path base =
                (db.ok() ? std::filesystem::path(*db).parent_path() : std::filesystem::temp_directory_path()) /
                "scaling";
            std::string stamp = rfc3339_utc(start_ms).substr(0, 19);  // 2026-12-01T10:50:00
            stamp.erase(std::remove(stamp.begin(), stamp.end(), ':'), stamp.end());
            o.work_dir = fmt::format("{}/{}-{}", base.string(), stamp, ::getpid());
        }
        struct sigaction sa {};
        sa.sa_handler = on_stop_signal;
        sigaction(SIGINT, &sa, nullptr);
        sigaction(SIGTERM, &sa, nullptr);
        o.stop = &g_stop;
        Result<bench::BenchReport> r = bench::run_scaling_bench(o);
        if (!r.ok()) return runtime_error("bench scaling: " + r.error().message);
        return print(a, config_path, "scaling", start_ms, *r);
    }
    if (a.allreduce->parsed()) {
        bench::AllreduceOptions o;
        if (!a.max_size.empty()) {
            const std::optional<std::uint64_t> size = parse_size(a.max_size);
            if (!size || *size < 8 || *size > (std::uint64_t{64} << 30))
                return usage_error("bench allreduce --max-size " + a.max_size + ": expected 8 to 64G, e.g. 256M");
            o.max_bytes = *size;
        }
        o.nvml_library = cfg->nvml_library;
        o.python = a.python;
        o.gpus = a.gpus;
        o.op = *bench::parse_collective(a.op);
        o.iters = a.iters;
        o.warmup = a.warmup;
        o.deadline_seconds = a.deadline;
        o.ok_share = cfg->bench_ok_share;
        o.sys_root = cfg->sys_root;
        o.sampler = *so;
        Result<bench::BenchReport> r = bench::run_allreduce_bench(o);
        if (!r.ok()) return runtime_error("bench allreduce: " + r.error().message);
        return print(a, config_path, "allreduce", start_ms, *r);
    }
    if (a.memory->parsed()) {
        bench::MemoryBenchOptions o;
        o.sys_root = cfg->sys_root;
        o.max_threads = a.threads;
        o.ok_share = cfg->bench_memory_ok_share;
        o.sampler = *so;
        return print(a, config_path, "memory", start_ms, bench::run_memory_bench(o));
    }
    if (a.disk->parsed()) {
        bench::DiskBenchOptions o;
        o.path = a.path;
        if (!a.size.empty()) {
            const std::optional<std::uint64_t> size = parse_size(a.size);
            if (!size || *size < (1u << 20))
                return usage_error("bench disk --size " + a.size + ": expected 1M or more, e.g. 4G");
            o.size = *size;
        }
        Result<std::optional<double>> need = disk_need(a, config_path, o.need_source);
        if (!need.ok()) return usage_error("bench disk: " + need.error().message);
        o.need = *need;
        o.seconds_per_test = a.seconds_per_test;
        o.sys_root = cfg->sys_root;
        o.sampler = *so;
        Result<bench::BenchReport> r = bench::run_disk_bench(o);
        if (!r.ok()) return runtime_error("bench disk: " + r.error().message);
        return print(a, config_path, "disk", start_ms, *r);
    }

    // No subcommand: every bench that applies, quickly, then one summary table.
    std::vector<bench::BenchReport> reports;
    bench::MemoryBenchOptions mem;
    mem.sys_root = cfg->sys_root;
    mem.repeats = 3;
    mem.array_bytes = std::size_t{256} << 20;
    mem.ok_share = cfg->bench_memory_ok_share;
    mem.sampler = *so;
    reports.push_back(bench::run_memory_bench(mem));
    bench::DiskBenchOptions disk;
    std::error_code ec;
    disk.path = a.path.empty() ? std::filesystem::current_path(ec).string() : a.path;
    disk.size = std::uint64_t{512} << 20;
    disk.seconds_per_test = 3;
    disk.sys_root = cfg->sys_root;
    disk.sampler = *so;
    reports.push_back(skipped_on_error("disk", bench::run_disk_bench(disk)));
    bench::H2dOptions h2d;
    h2d.min_size = std::uint64_t{1} << 20;
    h2d.max_size = std::uint64_t{256} << 20;
    h2d.deadline_seconds = a.deadline;
    h2d.ok_share = cfg->bench_ok_share;
    h2d.sys_root = cfg->sys_root;
    h2d.sampler = *so;
    reports.push_back(skipped_on_error("h2d", bench::run_h2d_bench(h2d)));
    bench::AllreduceOptions nccl;
    nccl.min_bytes = std::uint64_t{1} << 20;
    nccl.max_bytes = std::uint64_t{256} << 20;
    nccl.warmup = 2;
    nccl.iters = 10;
    nccl.nvml_library = cfg->nvml_library;
    nccl.deadline_seconds = a.deadline;
    nccl.ok_share = cfg->bench_ok_share;
    nccl.sys_root = cfg->sys_root;
    nccl.sampler = *so;
    reports.push_back(skipped_on_error("allreduce", bench::run_allreduce_bench(nccl)));
    bench::BenchReport net;
    net.bench = "net";
    net.skipped = true;
    net.links.push_back({"net", 0, std::nullopt, "", std::nullopt, "skipped",
                         "needs a peer: baton bench net --listen there, --connect HOST here"});
    reports.push_back(std::move(net));
    const std::string text = bench::summary_text(reports);
    if (!write_stdout(a.json ? bench::summary_json(reports) : text)) return kExitFailure;
    record(a, config_path, "", start_ms, reports, text);
    return kExitOk;
}

}  // namespace baton::cli
