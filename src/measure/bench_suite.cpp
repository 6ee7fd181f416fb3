#include "measure/bench_suite.hpp"

#include <algorithm>
#include <optional>
#include <regex>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/units.hpp"

namespace baton::measure {

BenchSettings bench_settings(const Config& config, const SamplerOptions& sampler) {
    BenchSettings s;
    s.sys_root = config.sample.sys_root;
    s.nvml_library = config.gpu.nvml_library;
    s.ok_share = config.bench.ok_share;
    s.memory_ok_share = config.bench.memory_ok_share;
    s.scaling_alarm = config.bench.scaling_alarm;
    s.sampler = sampler;
    return s;
}

MemoryBenchOptions plan_memory(const BenchRequest& r, const BenchSettings& s) {
    MemoryBenchOptions o;
    o.sys_root = s.sys_root;
    o.max_threads = r.threads;
    o.ok_share = s.memory_ok_share;
    o.sampler = s.sampler;
    return o;
}

Result<DiskBenchOptions> plan_disk(const BenchRequest& r, const BenchSettings& s) {
    DiskBenchOptions o;
    o.path = r.path;
    if (!r.size.empty()) {
        const std::optional<std::uint64_t> size = parse_size(r.size);
        if (!size || *size < (1u << 20))
            return make_error(ErrorCode::invalid_argument,
                              "bench disk --size " + r.size + ": expected 1M or more, e.g. 4G");
        o.size = *size;
    }
    o.seconds_per_test = r.seconds_per_test;
    o.sys_root = s.sys_root;
    o.sampler = s.sampler;
    return o;
}

namespace {

// --max-size of h2d and allreduce: `least` up to 64 GiB.
Result<std::uint64_t> max_size(const std::string& text, const char* bench, std::uint64_t least,
                               const char* least_text) {
    const std::optional<std::uint64_t> size = parse_size(text);
    if (!size || *size < least || *size > (std::uint64_t{64} << 30))
        return make_error(ErrorCode::invalid_argument, std::string("bench ") + bench + " --max-size " + text +
                                                           ": expected " + least_text + " to 64G, e.g. 256M");
    return *size;
}

}  // namespace

Result<H2dOptions> plan_h2d(const BenchRequest& r, const BenchSettings& s) {
    H2dOptions o;
    if (!r.max_size.empty()) {
        Result<std::uint64_t> size = max_size(r.max_size, "h2d", 4096, "4K");
        if (!size.ok()) return size.error();
        o.max_size = *size;
        // Small maxima stay quick: no size copies more than 16 times the largest.
        o.bytes_per_point = std::min<std::uint64_t>(o.bytes_per_point, 16 * *size);
    }
    o.gpu = r.gpu;
    o.deadline_seconds = r.deadline;
    o.ok_share = s.ok_share;
    o.sys_root = s.sys_root;
    o.sampler = s.sampler;
    return o;
}

Result<AllreduceOptions> plan_allreduce(const BenchRequest& r, const BenchSettings& s) {
    AllreduceOptions o;
    if (!r.max_size.empty()) {
        Result<std::uint64_t> size = max_size(r.max_size, "allreduce", 8, "8");
        if (!size.ok()) return size.error();
        o.max_bytes = *size;
    }
    const std::optional<Collective> op = parse_collective(r.op);
    if (!op)
        return make_error(
            ErrorCode::invalid_argument,
            "bench allreduce --op " + r.op + ": expected all_reduce, all_gather, reduce_scatter or broadcast");
    o.op = *op;
    o.nvml_library = s.nvml_library;
    o.python = r.python;
    o.gpus = r.gpus;
    o.iters = r.iters;
    o.warmup = r.warmup;
    o.deadline_seconds = r.deadline;
    o.ok_share = s.ok_share;
    o.sys_root = s.sys_root;
    o.sampler = s.sampler;
    return o;
}

bool net_needs_a_side(const BenchRequest& r) {
    return !r.listen_given && r.connect.empty();
}

Result<ListenAddress> plan_net_listen(const BenchRequest& r) {
    Result<ListenAddress> listen =
        parse_listen_address(r.listen.empty() ? "0.0.0.0:" + std::to_string(kNetDefaultPort) : r.listen);
    if (!listen.ok()) return make_error(ErrorCode::invalid_argument, "bench net --listen: " + listen.error().message);
    return listen;
}

Result<NetClientOptions> plan_net_client(const BenchRequest& r, const BenchSettings& s) {
    Result<std::pair<std::string, int>> target = parse_host_port(r.connect);
    if (!target.ok()) return make_error(ErrorCode::invalid_argument, "bench net " + target.error().message);
    NetClientOptions o;
    o.host = target->first;
    o.port = target->second;
    o.streams = r.streams;
    o.seconds = r.seconds;
    o.sys_root = s.sys_root;
    o.ok_share = s.ok_share;
    o.sampler = s.sampler;
    return o;
}

Result<ScalingOptions> plan_scaling(const BenchRequest& r, const BenchSettings& s, std::vector<std::string> command,
                                    const std::string& baton, const std::string& scaling_dir, std::int64_t start_ms,
                                    int pid) {
    if (!command.empty() && command.front() == "--") command.erase(command.begin());
    if (command.empty())
        return make_error(ErrorCode::invalid_argument,
                          "bench scaling: no training given (baton bench scaling --gpus 1,2 -- train.py)");
    Result<std::vector<int>> sizes = parse_sizes(r.sizes);
    if (!sizes.ok()) return make_error(ErrorCode::invalid_argument, "bench scaling " + sizes.error().message);
    ScalingOptions o;
    o.sizes = *sizes;
    o.command = std::move(command);
    o.seconds = r.train_seconds;
    o.warmup_seconds = r.warmup_seconds < 0 ? r.train_seconds / 4 : r.warmup_seconds;
    if (o.warmup_seconds >= o.seconds)
        return make_error(ErrorCode::invalid_argument, "bench scaling: --warmup must be shorter than --seconds");
    o.metric_regex = r.metric_regex;
    if (!o.metric_regex.empty()) {
        try {
            std::regex check(o.metric_regex);
        } catch (const std::regex_error& e) {
            return make_error(ErrorCode::invalid_argument,
                              "bench scaling --metric-regex: not a regular expression: " + std::string(e.what()));
        }
    }
    o.alarm = s.scaling_alarm;
    if (r.no_gpus) o.launch_args.push_back("--no-gpus");
    if (r.module) o.launch_args.push_back("--module");
    if (r.no_python) o.launch_args.push_back("--no-python");
    if (r.python_given) o.launch_args.insert(o.launch_args.end(), {"--python", r.python});
    o.baton = baton;
    o.work_dir = r.work_dir;
    if (o.work_dir.empty()) {
        std::string stamp = rfc3339_utc(start_ms).substr(0, 19);  // 2026-12-01T10:50:00
        stamp.erase(std::remove(stamp.begin(), stamp.end(), ':'), stamp.end());
        o.work_dir = fmt::format("{}/{}-{}", scaling_dir, stamp, pid);
    }
    return o;
}

QuickSuite plan_quick_suite(const BenchSettings& s, const std::string& disk_path, double deadline_seconds) {
    QuickSuite q;
    q.memory.sys_root = s.sys_root;
    q.memory.repeats = 3;
    q.memory.array_bytes = std::size_t{256} << 20;
    q.memory.ok_share = s.memory_ok_share;
    q.memory.sampler = s.sampler;

    q.disk.path = disk_path;
    q.disk.size = std::uint64_t{512} << 20;
    q.disk.seconds_per_test = 3;
    q.disk.sys_root = s.sys_root;
    q.disk.sampler = s.sampler;

    q.h2d.min_size = std::uint64_t{1} << 20;
    q.h2d.max_size = std::uint64_t{256} << 20;
    q.h2d.deadline_seconds = deadline_seconds;
    q.h2d.ok_share = s.ok_share;
    q.h2d.sys_root = s.sys_root;
    q.h2d.sampler = s.sampler;

    q.allreduce.min_bytes = std::uint64_t{1} << 20;
    q.allreduce.max_bytes = std::uint64_t{256} << 20;
    q.allreduce.warmup = 2;
    q.allreduce.iters = 10;
    q.allreduce.nvml_library = s.nvml_library;
    q.allreduce.deadline_seconds = deadline_seconds;
    q.allreduce.ok_share = s.ok_share;
    q.allreduce.sys_root = s.sys_root;
    q.allreduce.sampler = s.sampler;
    return q;
}

BenchReport skipped_report(const std::string& bench, const std::string& why) {
    BenchReport skipped;
    skipped.bench = bench;
    skipped.skipped = true;
    skipped.links.push_back({bench, 0, std::nullopt, "", std::nullopt, "skipped", why});
    return skipped;
}

namespace {

BenchReport skipped_on_error(const std::string& bench, Result<BenchReport> r) {
    if (r.ok()) return std::move(*r);
    return skipped_report(bench, r.error().message);
}

}  // namespace

std::vector<BenchReport> run_quick_suite(const QuickSuite& q) {
    std::vector<BenchReport> reports;
    reports.push_back(run_memory_bench(q.memory));
    reports.push_back(skipped_on_error("disk", run_disk_bench(q.disk)));
    reports.push_back(skipped_on_error("h2d", run_h2d_bench(q.h2d)));
    reports.push_back(skipped_on_error("allreduce", run_allreduce_bench(q.allreduce)));
    reports.push_back(skipped_report("net", "needs a peer: baton bench net --listen there, --connect HOST here"));
    return reports;
}

}  // namespace baton::measure
