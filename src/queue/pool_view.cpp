#include "queue/pool_view.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/printable.hpp"
#include "queue/job_text.hpp"

namespace baton::queue {

using nlohmann::json;

PoolView pool_view(const Pool& pool, const std::vector<std::pair<std::int64_t, std::vector<std::string>>>& holders) {
    PoolView v;
    v.gpus_known = pool.gpus_known;
    v.problem = pool.gpus_problem;
    std::vector<const PoolGpu*> order;
    for (const PoolGpu& g : pool.gpus) order.push_back(&g);
    std::stable_sort(order.begin(), order.end(), [](const PoolGpu* a, const PoolGpu* b) {
        return a->preference != b->preference ? a->preference < b->preference : a->index < b->index;
    });
    for (const PoolGpu* g : order) {
        PoolView::Gpu out;
        out.index = g->index;
        out.uuid = g->uuid;
        out.memory_total_bytes = g->memory_total_bytes;
        out.memory_used_bytes = g->memory_used_bytes;
        for (const auto& [job, uuids] : holders)
            if (std::find(uuids.begin(), uuids.end(), g->uuid) != uuids.end()) out.jobs.push_back(job);
        for (const ForeignProcess& f : g->foreign) out.foreign.emplace_back(f.pid, f.user);
        v.gpus.push_back(std::move(out));
    }
    return v;
}

json pool_view_json(const PoolView& p) {
    json gpus = json::array();
    for (const PoolView::Gpu& g : p.gpus) {
        json foreign = json::array();
        for (const auto& [pid, user] : g.foreign) foreign.push_back({{"pid", pid}, {"user", user}});
        gpus.push_back({{"index", g.index},
                        {"uuid", g.uuid},
                        {"memory_total_bytes", g.memory_total_bytes},
                        {"memory_used_bytes", g.memory_used_bytes},
                        {"jobs", g.jobs},
                        {"foreign", foreign}});
    }
    json o = {{"gpus_known", p.gpus_known}, {"gpus", gpus}};
    if (!p.problem.empty()) o["problem"] = p.problem;
    return o;
}

Result<PoolView> parse_pool_view(const json& j) {
    const Error wrong = make_error(ErrorCode::invalid_argument, "the agent's pool is not a list of GPUs");
    if (!j.is_object() || !j.contains("gpus") || !j["gpus"].is_array()) return wrong;
    PoolView p;
    if (j.contains("gpus_known")) {
        if (!j["gpus_known"].is_boolean()) return wrong;
        p.gpus_known = j["gpus_known"].get<bool>();
    }
    if (j.contains("problem")) {
        if (!j["problem"].is_string()) return wrong;
        p.problem = j["problem"].get<std::string>();
    }
    for (const json& g : j["gpus"]) {
        if (!g.is_object() || !g.contains("index") || !g["index"].is_number_unsigned() || !g.contains("uuid") ||
            !g["uuid"].is_string() || !g.value("memory_total_bytes", json()).is_number_unsigned() ||
            !g.value("memory_used_bytes", json()).is_number_unsigned() || !g.value("jobs", json()).is_array() ||
            !g.value("foreign", json()).is_array() || g["index"].get<std::uint64_t>() > 1u << 20)
            return wrong;
        PoolView::Gpu out;
        out.index = g["index"].get<unsigned>();
        out.uuid = g["uuid"].get<std::string>();
        out.memory_total_bytes = g["memory_total_bytes"].get<std::uint64_t>();
        out.memory_used_bytes = g["memory_used_bytes"].get<std::uint64_t>();
        for (const json& id : g["jobs"]) {
            if (!id.is_number_integer()) return wrong;
            out.jobs.push_back(id.get<std::int64_t>());
        }
        for (const json& f : g["foreign"]) {
            if (!f.is_object() || !f.value("pid", json()).is_number_unsigned() ||
                !f.value("user", json()).is_string() || f["pid"].get<std::uint64_t>() > 0xffffffffu)
                return wrong;
            out.foreign.emplace_back(f["pid"].get<std::uint32_t>(), f["user"].get<std::string>());
        }
        p.gpus.push_back(std::move(out));
    }
    return p;
}

std::string pool_table(const PoolView& p) {
    if (!p.gpus_known) return "the queue cannot read the GPUs: " + printable(p.problem) + "\n";
    if (p.gpus.empty()) return "the queue has no GPUs to give (none here, or [queue] gpus names none of them)\n";
    std::vector<std::vector<std::string>> rows{{"GPU", "UUID", "MEMORY", "STATE", "HELD BY"}};
    for (const PoolView::Gpu& g : p.gpus) {
        std::string by, state = g.jobs.empty() ? "free" : "held";
        for (std::int64_t id : g.jobs) by += (by.empty() ? "job " : ", job ") + std::to_string(id);
        for (const auto& [pid, user] : g.foreign)
            by += (by.empty() ? "" : ", ") + fmt::format("pid {} ({})", pid, printable(user));
        if (g.jobs.empty() && !g.foreign.empty()) state = "foreign";
        rows.push_back({std::to_string(g.index), printable(g.uuid),
                        fmt::format("{:.1f}/{:.1f} GiB", static_cast<double>(g.memory_used_bytes) / (1u << 30),
                                    static_cast<double>(g.memory_total_bytes) / (1u << 30)),
                        state, by.empty() ? "-" : by});
    }
    return columns_text(rows) + "(in the order the queue gives them: [queue] gpus and prefer)\n";
}

}  // namespace baton::queue
