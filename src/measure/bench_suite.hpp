// What `baton bench` runs, decided apart from running it: the flags of one bench as the user typed
// them (a BenchRequest) and the config's shares and roots (BenchSettings) -> the options of that
// bench, or an invalid_argument error naming the flag; and the quick suite that `baton bench`
// without a subcommand runs (each bench small enough that the whole suite takes about a minute).
// Pure: nothing here measures, so the flag checks are unit-tested without starting the binary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "measure/allreduce_bench.hpp"
#include "measure/bench_report.hpp"
#include "measure/disk_bench.hpp"
#include "measure/h2d_bench.hpp"
#include "measure/memory_bench.hpp"
#include "measure/net_bench.hpp"
#include "measure/scaling_bench.hpp"
#include "core/config.hpp"
#include "core/listen_address.hpp"
#include "core/result.hpp"
#include "sample/sampler.hpp"

namespace baton::measure {

// The flags of `baton bench` and its subcommands, unparsed where the user types units
// (sizes, rates); the CLI binds its options to these fields (defaults as docs/cli.md states).
struct BenchRequest {
    // scaling
    std::string sizes;  // --gpus 1,2,4,8
    double train_seconds = 60;
    double warmup_seconds = -1;  // -1: a quarter of train_seconds
    std::string metric_regex;
    bool no_gpus = false;
    bool module = false;
    bool no_python = false;
    bool python_given = false;  // --python was typed (scaling passes it on to baton launch only then)
    std::string work_dir;
    // allreduce
    int gpus = 0;
    std::string op = "all_reduce";
    int iters = 20, warmup = 5;
    std::string python = "python3";
    // h2d
    int gpu = -1;
    std::string max_size;  // also allreduce's
    double deadline = 30;  // also allreduce's and the quick suite's
    // memory
    unsigned threads = 0;
    // disk (and the quick suite's disk)
    std::string path;
    std::string size;
    std::string need;
    std::string need_from_run;
    double seconds_per_test = 5;
    // net
    std::string listen;
    bool listen_given = false;  // --listen was typed, with or without a value
    std::string connect;
    bool once = false;
    unsigned streams = 4;
    double seconds = 10;
};

// What every bench takes from the config and the sampler.
struct BenchSettings {
    std::string sys_root = "/sys";
    std::string nvml_library;
    double ok_share = 0.85;        // [bench] ok_share
    double memory_ok_share = 0.6;  // [bench] memory_ok_share
    double scaling_alarm = 0.7;    // [bench] scaling_alarm
    SamplerOptions sampler;        // the snapshots around each bench
};
BenchSettings bench_settings(const Config& config, const SamplerOptions& sampler);

MemoryBenchOptions plan_memory(const BenchRequest& r, const BenchSettings& s);
// The disk bench without its need (bench_need.hpp decides that: it may read the history).
Result<DiskBenchOptions> plan_disk(const BenchRequest& r, const BenchSettings& s);
Result<H2dOptions> plan_h2d(const BenchRequest& r, const BenchSettings& s);
Result<AllreduceOptions> plan_allreduce(const BenchRequest& r, const BenchSettings& s);
Result<NetClientOptions> plan_net_client(const BenchRequest& r, const BenchSettings& s);
// --listen's address (default 0.0.0.0:5301).
Result<ListenAddress> plan_net_listen(const BenchRequest& r);
// Neither --listen nor --connect: the one-line usage error.
bool net_needs_a_side(const BenchRequest& r);

// `command`: the training after `--`; `baton`: this binary (each size runs `baton launch`);
// `scaling_dir`: where the default work directory goes (SCALING_DIR/STAMP-PID).
Result<ScalingOptions> plan_scaling(const BenchRequest& r, const BenchSettings& s, std::vector<std::string> command,
                                    const std::string& baton, const std::string& scaling_dir, std::int64_t start_ms,
                                    int pid);

// The quick suite: memory (3 repeats of 256 MiB arrays), disk (512 MiB, 3 s a test, under
// `disk_path`), h2d (1 to 256 MiB), allreduce (1 to 256 MiB, 2 warm-ups, 10 iterations); net
// needs a peer and is listed as skipped.
struct QuickSuite {
    MemoryBenchOptions memory;
    DiskBenchOptions disk;
    H2dOptions h2d;
    AllreduceOptions allreduce;
};
QuickSuite plan_quick_suite(const BenchSettings& s, const std::string& disk_path, double deadline_seconds);
// Runs it; a bench that cannot run here (no CUDA driver, a full disk) is a skipped report whose
// row says why, and the suite goes on.
std::vector<BenchReport> run_quick_suite(const QuickSuite& q);

// A report of `bench` that measured nothing, with the reason in its one row.
BenchReport skipped_report(const std::string& bench, const std::string& why);

}  // namespace baton::measure
