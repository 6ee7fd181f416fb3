// A job as the agent tells it to clients (docs/queue.md: a "job" of show and wait, each of a
// list's "jobs"): typed on both ends. The agent makes one from its record and encodes it; a client
// parses it back, so `baton show`, `wait` and `queue` read fields, never JSON keys, and a reply
// with a field of the wrong type is an error naming the field, not a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "queue/job_request.hpp"
#include "store/job_state.hpp"

namespace baton::queue {

struct JobView {
    std::int64_t id = 0;
    std::uint32_t owner_uid = 0;
    std::string owner, name;
    store::JobState state = store::JobState::queued;
    int priority = 0;
    std::vector<std::string> argv;
    std::string cwd;
    // What it asked for, and its retry options (absent when the agent could not read its request).
    struct Ask {
        Resources want;
        unsigned retries = 0;
        OnOom on_oom = OnOom::fail;
        std::string group;          // baton group
        unsigned max_parallel = 0;  // its array's --max-parallel
    };
    std::optional<Ask> ask;
    std::vector<std::string> gpus;      // the UUIDs it holds
    std::vector<unsigned> gpu_indices;  // the same as baton numbers them
    std::vector<unsigned> cpus;
    std::vector<std::int64_t> after;
    bool after_ok = false;
    int attempt = 0;
    std::int64_t submit_ms = 0;
    std::optional<std::int64_t> start_ms, end_ms;
    std::optional<int> exit_status;
    std::optional<std::uint32_t> pid;  // its supervisor's
    std::optional<std::int64_t> run_id;
    std::optional<std::int64_t> paused_ms;  // running, its processes stopped (baton pause) since then
    std::string note;                       // why it ended as it did, or was queued again
    std::string waiting;                    // queued: why it does not start yet
    // An array's element: its array (the first element's id) and its index.
    std::optional<std::int64_t> array_id, array_index;
};

nlohmann::json job_view_json(const JobView& j);
// Errors: invalid_argument naming the first missing or mistyped field.
Result<JobView> parse_job_view(const nlohmann::json& j);

}  // namespace baton::queue
