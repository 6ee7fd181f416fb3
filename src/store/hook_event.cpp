#include "store/hook_event.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace baton {

using nlohmann::json;

namespace {

// A finite number >= 0 under `key`, or an error naming it.
Result<double> non_negative(const json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return make_error(std::string("'") + key + "' must be a number");
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < 0) return make_error(std::string("'") + key + "' must be a number >= 0");
    return v;
}

Result<std::int64_t> whole(const json& j, const char* key, std::int64_t max) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::int64_t>() > max)
        return make_error(std::string("'") + key + "' must be an integer from 0 to " + std::to_string(max));
    return it->get<std::int64_t>();
}

}  // namespace

Result<HookEvent> parse_hook_event(std::string_view datagram) {
    if (datagram.size() > kMaxHookEventBytes)
        return make_error("event of " + std::to_string(datagram.size()) + " bytes (at most " +
                          std::to_string(kMaxHookEventBytes) + ")");
    json j = json::parse(datagram.begin(), datagram.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return make_error("not JSON");
    if (!j.is_object()) return make_error("not a JSON object");
    HookEvent e;
    auto type = j.find("type");
    if (type == j.end() || !type->is_string()) return make_error("'type' must be a string");
    e.type = type->get<std::string>();
    Result<double> t = non_negative(j, "t");
    if (!t.ok()) return t.error();
    e.step.t_ms = static_cast<std::int64_t>(*t);
    if (j.contains("pid")) {
        Result<std::int64_t> pid = whole(j, "pid", 4194304);
        if (!pid.ok()) return pid.error();
        e.pid = e.step.pid = static_cast<std::uint32_t>(*pid);
    }
    if (j.contains("dropped")) {
        Result<std::int64_t> dropped = whole(j, "dropped", INT64_MAX);
        if (!dropped.ok()) return dropped.error();
        e.dropped = static_cast<std::uint64_t>(*dropped);
    }
    if (e.type != "step") return e;
    Result<std::int64_t> rank = whole(j, "rank", 1 << 20);
    if (!rank.ok()) return rank.error();
    Result<std::int64_t> step = whole(j, "step", INT64_MAX);
    if (!step.ok()) return step.error();
    Result<double> step_ms = non_negative(j, "step_ms");
    if (!step_ms.ok()) return step_ms.error();
    Result<double> wait_ms = non_negative(j, "wait_ms");
    if (!wait_ms.ok()) return wait_ms.error();
    e.step.rank = static_cast<int>(*rank);
    e.step.step = *step;
    e.step.step_ms = *step_ms;
    e.step.wait_ms = std::min(*wait_ms, *step_ms);  // rounding on the sender's side
    if (j.contains("samples")) {
        Result<std::int64_t> samples = whole(j, "samples", INT64_MAX);
        if (!samples.ok()) return samples.error();
        e.step.samples = *samples;
    }
    if (auto data = j.find("data"); data != j.end()) {
        if (!data->is_object()) return make_error("'data' must be an object");
        e.step.data = data->dump();
    }
    return e;
}

}  // namespace baton
