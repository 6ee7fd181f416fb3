// What `baton doctor` looks at: one snapshot (GPUs, memory, swap, network, processes), the
// environment variables that matter to CUDA and NCCL, resource limits, and the PyTorch that
// `python3` imports. Gathering does the I/O; the checks (checks.hpp) are pure over these facts.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "sample/sampler.hpp"
#include "sample/snapshot.hpp"

namespace baton::doctor {

struct TorchFacts {
    bool probed = false;     // a python ran (or timed out)
    std::string python;      // the interpreter asked
    bool asked = false;      // named by the user (--python): not being able to ask it is a failure, not a skip
    std::string error;       // why there is no answer: not found, timeout, no torch module, ...
    std::string executable;  // the interpreter's sys.executable, when it answered
    // Without torch: where it is on this machine and what to give --python (pythons.hpp's words).
    std::string elsewhere;
    std::optional<std::string> python_version, torch_version, cuda_version, cudnn_version, nccl_version;
    bool cuda_available = false;
    unsigned device_count = 0;
};

struct LimitFacts {
    std::optional<unsigned long long> memlock_bytes;  // soft RLIMIT_MEMLOCK; nullopt: unlimited
    std::optional<unsigned long long> nofile;         // soft RLIMIT_NOFILE; nullopt: unlimited
};

// The job queue's agent, as `baton doctor` finds it (gathered by the CLI, which talks to the agent).
struct QueueFacts {
    bool agent = false;        // an agent answered on its socket
    std::string socket;        // where it answered, or where one would listen
    bool job_cgroups = false;  // its jobs get cgroups of their own
    std::string cgroups;       // what its jobs get, in words (the agent's own line, or what one started now would get)
    // The GPUs it may give, in the order it gives them ("3, 2, 0, 1"), and how many are free; none:
    // no agent, or one too old to say. gpus_problem: why it cannot read the GPUs.
    std::optional<std::string> gpus;
    unsigned gpus_free = 0, gpus_count = 0;
    std::string gpus_problem;
};

// baton's own config, as the CLI loaded it: the files read and the keys they change.
struct ConfigFacts {
    std::vector<std::string> files;    // the layers that exist, in the order read
    std::vector<std::string> changed;  // "section.key = value", the keys that differ from the defaults
};

struct DoctorFacts {
    QueueFacts queue;
    ConfigFacts config;
    Snapshot snapshot;
    std::map<std::string, std::string> env;  // only the variables the checks read, when set
    LimitFacts limits;
    TorchFacts torch;
};

// The environment variables the checks read.
const std::vector<std::string>& doctor_env_names();

struct GatherOptions {
    SamplerOptions sampler;
    std::string python = "python3";  // looked up on PATH unless it contains a '/'
    bool python_asked = false;       // the user named it (doctor --python)
    double python_timeout_seconds = 20;
    bool probe_torch = true;
};

DoctorFacts gather_facts(const GatherOptions& o);

// The files load_config(config_path) read (those that exist) and what `c`, their result, changes.
ConfigFacts config_facts(const std::string& config_path, const Config& c);

// What `python -c CODE` printed on stdout (at most 1 MiB; stderr is dropped), `python` looked up on
// PATH unless it contains a '/', killed after `timeout` seconds.
struct PythonAnswer {
    std::string out;
    bool ran = false;  // it was started
    bool timed_out = false;
    int exit_status = -1;  // the shell's convention
    std::string error;     // not found, not executable, timed out ("" otherwise)
};
PythonAnswer run_python(const std::string& python, const std::string& code, double timeout);

// Asks `python` what PyTorch it imports (versions of torch, CUDA, cuDNN, NCCL; the devices it
// sees), killing it after `timeout` seconds. `answer`, when given, receives the probe's JSON line
// (for a cache: parse_torch_probe reads it back).
TorchFacts probe_torch(const std::string& python, double timeout, std::string* answer = nullptr);

// Parses the probe script's JSON answer into `t` (exposed for tests); false when malformed.
bool parse_torch_probe(const std::string& json_text, TorchFacts& t);

}  // namespace baton::doctor
