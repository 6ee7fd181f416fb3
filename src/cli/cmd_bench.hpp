// `baton bench`: is this machine delivering what its hardware promises? Host memory, disk,
// host-to-device copies, NCCL collectives, the network and scaling, each against the peak its
// hardware reports, with a verdict per link (bench/; users' side in docs/bench.md).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace baton::cli {

struct BenchArgs {
    bool json = false;
    std::string db;
    bool no_db = false;
    std::string name;
    CLI::App* memory = nullptr;
    CLI::App* disk = nullptr;
    CLI::App* net = nullptr;
    CLI::App* h2d = nullptr;
    CLI::App* allreduce = nullptr;
    CLI::App* scaling = nullptr;
    // scaling
    std::string sizes;
    double train_seconds = 60;
    double warmup_seconds = -1;  // -1: a quarter of train_seconds
    std::string metric_regex;
    bool no_gpus = false;
    bool module = false;
    bool no_python = false;
    std::string work_dir;
    // allreduce
    int gpus = 0;
    std::string op = "all_reduce";
    int iters = 20, warmup = 5;
    std::string python = "python3";
    // h2d
    int gpu = -1;
    std::string max_size;
    double deadline = 30;
    // memory
    unsigned threads = 0;
    // disk (and the summary's disk)
    std::string path;
    std::string size;
    std::string need;
    std::string need_from_run;
    double seconds_per_test = 5;
    // net
    std::string listen;
    bool listen_given = false;
    std::string connect;
    bool once = false;
    unsigned streams = 4;
    double seconds = 10;
};

CLI::App* add_bench_command(CLI::App& app, BenchArgs& args);
// `command`: the training of `bench scaling` (the words split_run_command() cut off).
int run_bench(const BenchArgs& args, const std::vector<std::string>& command, const std::string& config_path);

}  // namespace baton::cli
