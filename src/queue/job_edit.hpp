// `baton edit JOB ...`: what to change in a job that has not started (queued or held): its command,
// name, priority, dependencies, resources or group. Only what is given changes. The client reads
// the flags into a JobEdit (sizes, lists and names checked there, one line each); the agent applies it
// to the job's record and request, checks the result as it checks a submit, and stores it only while
// the job still waits (queue_edit.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.hpp"

namespace baton::queue {

struct JobEdit {
    std::optional<std::vector<std::string>> argv;
    std::optional<std::string> name;
    std::optional<int> priority;
    std::optional<std::vector<std::int64_t>> after;  // with after_ok; an empty list: no dependencies
    bool after_ok = false;
    std::optional<unsigned> gpus;                   // a count (the GPUs it named, if any, are forgotten)
    std::optional<std::string> gpu_list;            // exactly these GPUs, as --gpu takes them
    std::optional<std::uint64_t> gpu_memory_bytes;  // per GPU (0: none declared)
    std::optional<unsigned> cpus;
    std::optional<std::uint64_t> memory_bytes;
    std::optional<std::string> group;  // "": out of its group
    bool empty() const {
        return !argv && !name && !priority && !after && !gpus && !gpu_list && !gpu_memory_bytes && !cpus &&
               !memory_bytes && !group;
    }
};

// The flags as typed (docs/queue.md, "Editing a waiting job"); absent: unchanged.
struct EditFlags {
    std::optional<unsigned> gpus;
    std::optional<int> cpus, priority;
    std::optional<std::string> gpu, gpu_mem, mem, after, name, group;
};

// The edit the flags and the command words (`argv`, none when not given) ask for; an invalid_argument
// error naming the flag, or saying that nothing was asked.
Result<JobEdit> edit_of(const EditFlags& flags, const std::vector<std::string>& argv);

// On the wire (protocol.hpp): only the fields given; argv as base64 of NUL-ended strings.
nlohmann::json edit_json(const JobEdit& e);
Result<JobEdit> parse_edit_json(const nlohmann::json& j);

}  // namespace baton::queue
