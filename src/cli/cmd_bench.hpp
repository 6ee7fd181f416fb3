// `baton bench`: is this machine delivering what its hardware promises? Host memory, disk,
// host-to-device copies, NCCL collectives, the network and scaling, each against the peak its
// hardware reports, with a verdict per link (bench/; users' side in docs/bench.md).
#pragma once

#include <string>
#include <vector>

#include "measure/bench_suite.hpp"

namespace CLI {
class App;
}

namespace baton::cli {

struct BenchArgs {
    bool json = false;
    std::string db;
    bool no_db = false;
    std::string name;
    measure::BenchRequest request;  // the benches' own flags
    CLI::App* memory = nullptr;
    CLI::App* disk = nullptr;
    CLI::App* net = nullptr;
    CLI::App* h2d = nullptr;
    CLI::App* allreduce = nullptr;
    CLI::App* scaling = nullptr;
};

CLI::App* add_bench_command(CLI::App& app, BenchArgs& args);
// `command`: the training of `bench scaling` (the words split_run_command() cut off).
int run_bench(const BenchArgs& args, const std::vector<std::string>& command, const std::string& config_path);

}  // namespace baton::cli
