// The environment a queued job starts with: the submitter's, with what the queue decided on top
// (docs/queue.md, "The job's environment"). A pure function, so that each rule is tested alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace baton::queue {

struct JobEnvInput {
    std::vector<std::pair<std::string, std::string>> submitted;  // the submitter's environment
    bool gpu_job = false;                                        // it asked for GPUs
    std::vector<std::string> gpus;  // its GPUs as CUDA_VISIBLE_DEVICES names them: indices, or UUIDs
    unsigned cpus = 0;              // CPUs pinned to it (0: none)
    std::int64_t job_id = 0;
    // An array's element: BATON_ARRAY_ID (its first element's job id) and BATON_ARRAY_INDEX.
    std::optional<std::int64_t> array_id, array_index;
    int attempt = 0;          // 0 the first time; BATON_RETRY from 1 on
    bool after_oom = false;   // the attempt before died out of memory: BATON_OOM=1
    std::string events_path;  // BATON_EVENTS: where the Python hook sends its events
    std::string memory_dir;   // BATON_MEMORY_DIR: where the hook writes an out-of-memory capture
    // The stack handler's directory and where the stacks go (hang/stack_shim.hpp), and where the
    // Flight Recorder's dumps go (hang/flight_recorder.hpp); empty: not set.
    std::string stack_shim_dir, stacks_dir, flight_recorder_dir;
};

// "NAME=value" strings, sorted by name, each name once.
//   CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA numbers GPUs as nvidia-smi does;
//   CUDA_VISIBLE_DEVICES = its GPUs, and "" for a job without GPUs (it must not use the ones others hold);
//   OMP_NUM_THREADS and MKL_NUM_THREADS = its CPUs, unless the submitter set them;
//   BATON_JOB_ID, BATON_EVENTS, BATON_MEMORY_DIR, BATON_RETRY and BATON_OOM; BATON_ARRAY_ID and
//   BATON_ARRAY_INDEX for an array's element;
//   PYTHONPATH with the stack handler first, BATON_STACKS_DIR, BATON_STACKS_SIGNAL, and the Flight
//   Recorder's variables unless submitted (each pair when neither name was);
//   every other variable as submitted.
std::vector<std::string> job_environment(const JobEnvInput& in);

}  // namespace baton::queue
