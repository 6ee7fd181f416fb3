// What `baton launch` checks before any worker starts, so that a launch that cannot work says so
// in one line instead of hanging at the rendezvous: the master port, the NCCL and gloo interfaces,
// debugging switches left on, enough GPUs, and the PyTorch the ranks will import against the
// driver (doctor's probe and checks).
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"
#include "doctor/facts.hpp"
#include "doctor/pythons.hpp"
#include "launch/worker_env.hpp"
#include "sample/snapshot.hpp"

namespace baton::launch {

struct PreflightNote {
    bool error = false;  // false: a warning, the launch goes on
    std::string text;
};

// The interpreter the ranks would run (--python, else python3 on PATH), asked before any rank starts:
// an error when it cannot be run or has no torch (every rank would die of ModuleNotFoundError), naming
// it and where PyTorch is instead (`with_torch`, doctor/pythons.hpp); nothing (no note) when it has torch.
std::vector<PreflightNote> check_python(const doctor::PythonFound& asked,
                                        const std::vector<doctor::PythonFound>& with_torch);

struct InterfaceState {
    std::string name;
    bool up = false;  // operstate "up", or "unknown" (loopback, some virtual links)
};

// The machine's network interfaces, from `sys_class_net` (/sys/class/net).
std::vector<InterfaceState> read_interfaces(const std::string& sys_class_net = "/sys/class/net");

// NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME naming interfaces that exist and are up (errors), and
// debugging switches left in the environment (warnings). Pure.
std::vector<PreflightNote> check_launch_environment(const EnvLookup& env, const std::vector<InterfaceState>& ifs);

// The GPUs the ranks may use: CUDA_VISIBLE_DEVICES's entries when it is set, else the machine's
// GPUs by index (PCI order). Pure.
std::vector<std::string> visible_gpus(const EnvLookup& env, const Snapshot& machine);

// The PyTorch the ranks import, against the driver (doctor's cuda_driver and nccl checks): an
// error when the driver is older than the CUDA PyTorch was built for. Pure.
std::vector<PreflightNote> check_torch_against_driver(const Snapshot& machine, const doctor::TorchFacts& torch,
                                                      int local_ranks);

// The doctor's PyTorch probe for `python`, kept in `cache_dir` (torch-probe-*.json) and asked again
// only when torch's files (its version.py), the interpreter or the driver changed: importing torch
// takes 1 to 2 s, which would double a launch's start-up. Finding torch costs one short Python
// start. No torch: a fact with an error (the checks then say nothing).
doctor::TorchFacts cached_torch_probe(const std::string& python, const std::string& driver_version,
                                      const std::string& cache_dir, double timeout);
// $XDG_CACHE_HOME/baton, else ~/.cache/baton.
std::string default_cache_dir();

// Whether a TCP port can be bound on every address (as rank 0's TCPStore will); errors name what holds it.
Status check_port_free(int port);
// A port free now, chosen by the kernel.
Result<int> pick_free_port();

}  // namespace baton::launch
