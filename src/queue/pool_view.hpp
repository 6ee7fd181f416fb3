// The queue's GPU pool as the agent tells it (`baton queue --gpus`, `baton doctor`'s queue_gpus):
// each GPU the queue may give, in the order it gives them ([queue] gpus and prefer), with its memory
// and who holds it (the queue's jobs, or processes the queue did not start). Typed on both ends.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.hpp"
#include "queue/scheduler.hpp"

namespace baton::queue {

struct PoolView {
    bool gpus_known = true;
    std::string problem;  // why the GPUs cannot be read
    struct Gpu {
        unsigned index = 0;
        std::string uuid;
        std::uint64_t memory_total_bytes = 0, memory_used_bytes = 0;
        std::vector<std::int64_t> jobs;                              // the queue's jobs on it
        std::vector<std::pair<std::uint32_t, std::string>> foreign;  // pid, user: processes the queue did not start
    };
    std::vector<Gpu> gpus;  // in the order the queue gives them
};

// The view of `pool` with `holders` (each open job's id and the UUIDs it holds).
PoolView pool_view(const Pool& pool, const std::vector<std::pair<std::int64_t, std::vector<std::string>>>& holders);

nlohmann::json pool_view_json(const PoolView& p);
// Errors: invalid_argument naming the first missing or mistyped field.
Result<PoolView> parse_pool_view(const nlohmann::json& j);

// The table of `baton queue --gpus`: GPU, UUID, memory, what it is to the queue (free, held, busy, a
// foreign process), by whom.
std::string pool_table(const PoolView& p);

}  // namespace baton::queue
