// What `baton submit` asks for, between its flags and the store: the values users write (sizes,
// GPU lists, dependencies), the request's JSON as the store keeps it (jobs.request), and the check
// at submit time that refuses what this machine can never run, with the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/units.hpp"
#include "queue/scheduler.hpp"

namespace baton::queue {

enum class OnOom { fail, retry };

// The resources and the options kept with a job (its name, command, cwd, priority and `after`
// are columns of their own).
struct JobRequest {
    Resources want;
    bool gpu_memory_auto = false;  // --gpu-mem auto: the peak of earlier runs of the same name
    unsigned retries = 0;          // attempts after the first, on a CUDA or host out-of-memory death
    OnOom on_oom = OnOom::fail;
    bool slurm = false;  // handed to Slurm instead of this box's queue
    // --at / --delay: it starts no earlier than this (Unix milliseconds); none: as soon as it can.
    std::optional<std::int64_t> not_before_ms;
    std::string group;          // --group: at most the group's parallel limit of its jobs run at once
    unsigned max_parallel = 0;  // an array's element: at most this many of its array run at once (0: no limit)
    std::string on_end;         // --on-end: a shell command run as its owner when it ends (job_callbacks.hpp)
};

// --delay DURATION (30m, 2h, 90s) or --at TIME (HH:MM[:SS] local: today, or tomorrow once past;
// or YYYY-MM-DD HH:MM[:SS], or YYYY-MM-DDTHH:MM[:SS]) as the Unix milliseconds from which a job may
// start, `now_ms` being now. Errors name the flag and the forms.
Result<std::int64_t> parse_delay(std::string_view text, std::int64_t now_ms);
Result<std::int64_t> parse_at(std::string_view text, std::int64_t now_ms);

// Sizes ("20G") as core/units.hpp reads them, under the name the queue's callers use.
using baton::parse_size;

// A group's name (--group, baton group): 1 to 64 letters, digits, '.', '_' or '-', not starting
// with '-'; an invalid_argument error saying so.
Status check_group_name(std::string_view name);

// --after "3,4" (each must end) or "3,4:ok" (each must succeed).
struct After {
    std::vector<std::int64_t> jobs;
    bool ok = false;
};
Result<After> parse_after(std::string_view text);

// --gpu "0,2" or "GPU-8f3a...,GPU-77c1..." (a UUID or a unique prefix of one, as CUDA takes
// them): the UUIDs of those GPUs in the pool, in the order given.
Result<std::vector<std::string>> resolve_gpus(std::string_view text, const Pool& pool);

// The JSON of jobs.request, and back (unknown keys ignored, so an older agent reads a newer
// request; a wrong type is an error).
std::string request_json(const JobRequest& r);
Result<JobRequest> parse_request_json(std::string_view text);

// An invalid_argument error saying why this machine can never run the request (submit refuses
// it, exit 2); Ok when it can, or when the GPUs cannot be read to tell (the job then waits).
Status check_request(const JobRequest& r, const Pool& pool);

}  // namespace baton::queue
