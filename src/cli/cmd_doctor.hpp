// `baton doctor`: the environment checklist (driver, CUDA, PyTorch, GPUs, limits, variables).
#pragma once

#include <string>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace baton::cli {

struct DoctorArgs {
    bool json = false;
    std::string python = "python3";
    CLI::Option* python_option = nullptr;  // to know whether --python was given
    bool no_torch = false;
    double timeout = 20;
    bool no_gpus = false;
    std::string proc_root, sys_root;
    // --health: the node health check (doctor/health.hpp) instead of the checklist.
    bool health = false;
    CLI::Option* expect_gpus_option = nullptr;
    unsigned expect_gpus = 0;
    std::string kernel_log = "/dev/kmsg";
    CLI::Option* kernel_log_option = nullptr;
};

CLI::App* add_doctor_command(CLI::App& app, DoctorArgs& args);
int run_doctor(const DoctorArgs& args, const std::string& config_path);

}  // namespace baton::cli
