#include "queue/job_env.hpp"

#include <cstdlib>

#include <map>
#include <optional>

#include "hang/flight_recorder.hpp"
#include "hang/stack_shim.hpp"

namespace baton::queue {

std::vector<std::string> job_environment(const JobEnvInput& in) {
    std::map<std::string, std::string> env;
    for (const auto& [k, v] : in.submitted) env[k] = v;
    // A variable the queue owns is never taken from the submitter: a stale BATON_RETRY in a shell
    // would tell the script it is retried.
    for (const char* owned : {"BATON_JOB_ID", "BATON_EVENTS", "BATON_MEMORY_DIR", "BATON_RETRY", "BATON_OOM",
                              "BATON_ARRAY_ID", "BATON_ARRAY_INDEX", "BATON_VERSION"})
        env.erase(owned);
    // The agent's version, not the submitting client's: the hook compares its own with the baton
    // that reads its events (python/baton/_events.py).
    if (const char* v = std::getenv("BATON_VERSION")) env["BATON_VERSION"] = v;
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
    std::string visible;
    if (in.gpu_job)
        for (const std::string& g : in.gpus) visible += (visible.empty() ? "" : ",") + g;
    env["CUDA_VISIBLE_DEVICES"] = visible;
    if (in.cpus > 0) {
        env.try_emplace("OMP_NUM_THREADS", std::to_string(in.cpus));
        env.try_emplace("MKL_NUM_THREADS", std::to_string(in.cpus));
    }
    env["BATON_JOB_ID"] = std::to_string(in.job_id);
    if (in.array_id && in.array_index) {
        env["BATON_ARRAY_ID"] = std::to_string(*in.array_id);
        env["BATON_ARRAY_INDEX"] = std::to_string(*in.array_index);
    }
    if (!in.events_path.empty()) env["BATON_EVENTS"] = in.events_path;
    if (!in.memory_dir.empty()) env["BATON_MEMORY_DIR"] = in.memory_dir;
    if (in.attempt > 0) env["BATON_RETRY"] = std::to_string(in.attempt);
    if (in.after_oom) env["BATON_OOM"] = "1";
    // The stack handler first on the path (then the submitter's), and PyTorch's Flight Recorder
    // unless the submitter set its variables: the hang verdict of a queued job (docs/launch.md).
    auto submitted = [&in](const std::string& k) -> std::optional<std::string> {
        for (const auto& [name, v] : in.submitted)
            if (name == k) return v;
        return std::nullopt;
    };
    if (!in.stack_shim_dir.empty()) {
        env.erase(hang::kStacksDirVariable);  // a stale one of a `baton run` shell
        env.erase(hang::kStacksSignalVariable);
        for (const auto& [k, v] : hang::shim_environment(in.stack_shim_dir, in.stacks_dir, submitted("PYTHONPATH")))
            env[k] = v;
    }
    if (!in.flight_recorder_dir.empty())
        for (const auto& [k, v] : hang::flight_recorder_environment(in.flight_recorder_dir, submitted)) env[k] = v;
    std::vector<std::string> out;
    out.reserve(env.size());
    for (const auto& [k, v] : env) out.push_back(k + "=" + v);
    return out;
}

}  // namespace baton::queue
