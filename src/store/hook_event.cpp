#include "store/hook_event.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace baton::store {

using nlohmann::json;

namespace {

// A number from 0 to `max` under `key`, or an error naming it. Every time is bounded before it
// becomes an integer: 1e19 ms must not turn into INT64_MIN.
Result<double> non_negative(const json& j, const char* key, double max) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return make_error(std::string("'") + key + "' must be a number");
    const double v = it->get<double>();
    if (!(v >= 0 && v <= max)) {
        char range[64];
        std::snprintf(range, sizeof range, "from 0 to %.0f", max);
        return make_error(std::string("'") + key + "' must be a number " + range);
    }
    return v;
}

// The latest time an event may carry (9999-12-31, in ms since the epoch), and the longest step.
constexpr double kMaxTimeMs = 253402300799999.0;
constexpr double kMaxStepMs = 1e9;  // 11.6 days

Result<std::int64_t> whole(const json& j, const char* key, std::int64_t max) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::int64_t>() > max)
        return make_error(std::string("'") + key + "' must be an integer from 0 to " + std::to_string(max));
    return it->get<std::int64_t>();
}

// A string under `key` of at most `max` bytes (empty allowed unless `required`).
Result<std::string> text(const json& j, const char* key, std::size_t max, bool required = true) {
    auto it = j.find(key);
    if (it == j.end() && !required) return std::string();
    if (it == j.end() || !it->is_string() || it->get_ref<const std::string&>().size() > max ||
        (required && it->get_ref<const std::string&>().empty()))
        return make_error(std::string("'") + key + "' must be a string of 1 to " + std::to_string(max) + " bytes");
    return it->get<std::string>();
}

Result<diagnose::Finding> finding_of(const json& j) {
    diagnose::Finding f;
    Result<std::string> rule = text(j, "rule", 64);
    if (!rule.ok()) return rule.error();
    if (!std::all_of(rule->begin(), rule->end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }))
        return make_error("'rule' must be a lower-case id");
    Result<std::string> severity = text(j, "severity", 16);
    if (!severity.ok()) return severity.error();
    if (*severity == "info")
        f.severity = diagnose::Severity::info;
    else if (*severity == "warning")
        f.severity = diagnose::Severity::warning;
    else if (*severity == "critical")
        f.severity = diagnose::Severity::critical;
    else
        return make_error("'severity' must be info, warning or critical");
    Result<std::string> subject = text(j, "subject", 256);
    Result<std::string> summary = text(j, "summary", 4096);
    Result<std::string> fix = text(j, "recommendation", 4096);
    Result<std::string> snippet = text(j, "snippet", 4096, /*required=*/false);
    for (const Result<std::string>* r : {&subject, &summary, &fix, &snippet})
        if (!r->ok()) return r->error();
    f.rule = *rule;
    f.subject = *subject;
    f.summary = *summary;
    f.recommendation = *fix;
    if (!snippet->empty()) f.snippet = *snippet;
    f.doc = "docs/findings.md#" + f.rule;
    return f;
}

}  // namespace

namespace {

std::optional<AllocatorFigures> figures_of(const json& data) {
    const auto cuda = data.find("cuda");
    if (cuda == data.end() || !cuda->is_object()) return std::nullopt;
    const auto count = [&](const char* key, bool required, std::uint64_t& out) {
        const auto v = cuda->find(key);
        if (v == cuda->end()) return !required;
        if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<std::int64_t>() < 0)) return false;
        out = v->get<std::uint64_t>();
        return true;
    };
    AllocatorFigures f;
    std::uint64_t device = 0;
    if (!count("device", false, device) || device > 1023 || !count("allocated_bytes", true, f.allocated) ||
        !count("reserved_bytes", true, f.reserved) || !count("active_bytes", false, f.active) ||
        !count("peak_allocated_bytes", false, f.peak_allocated) ||
        !count("inactive_split_bytes", false, f.inactive_split) || !count("num_ooms", false, f.num_ooms) ||
        !count("num_alloc_retries", false, f.num_alloc_retries) || !count("total_bytes", false, f.total))
        return std::nullopt;
    f.device = static_cast<unsigned>(device);
    return f;
}

}  // namespace

std::optional<AllocatorFigures> parse_allocator_figures(std::string_view data_json) {
    if (data_json.empty() || data_json.size() > kMaxHookEventBytes) return std::nullopt;
    const json j = json::parse(data_json.begin(), data_json.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    return figures_of(j);
}

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
    Result<double> t = non_negative(j, "t", kMaxTimeMs);
    if (!t.ok()) return t.error();
    e.step.t_ms = static_cast<std::int64_t>(*t);
    if (j.contains("pid")) {
        Result<std::int64_t> pid = whole(j, "pid", 4194304);
        if (!pid.ok()) return pid.error();
        e.step.pid = static_cast<std::uint32_t>(*pid);
    }
    if (j.contains("dropped")) {
        Result<std::int64_t> dropped = whole(j, "dropped", INT64_MAX);
        if (!dropped.ok()) return dropped.error();
        e.dropped = static_cast<std::uint64_t>(*dropped);
    }
    if (e.type == "finding") {
        Result<diagnose::Finding> f = finding_of(j);
        if (!f.ok()) return f.error();
        e.finding = std::move(*f);
        return e;
    }
    if (e.type == "profile" || e.type == "oom") {
        auto path = j.find("path");
        if (path == j.end() || !path->is_string()) return make_error("'path' must be a string");
        e.path = path->get<std::string>();
        if (e.path.empty() || e.path.front() != '/' || e.path.size() > 4096 || e.path.find('\0') != std::string::npos)
            return make_error("'path' must be an absolute path");
        if (e.type == "profile") {
            Result<std::int64_t> steps = whole(j, "steps", 1'000'000);
            if (!steps.ok()) return steps.error();
            e.profile_steps = *steps;
        }
        Result<std::int64_t> rank = whole(j, "rank", 1 << 20);
        if (!rank.ok()) return rank.error();
        e.step.rank = static_cast<int>(*rank);
        return e;
    }
    if (e.type == "loader" || e.type == "process" || e.type == "losses" || e.type == "live") {
        e.body = std::string(datagram);
        return e;
    }
    if (e.type == "hook") {
        auto mode = j.find("mode");
        if (mode == j.end() || !mode->is_string() || mode->get_ref<const std::string&>().size() > 32)
            return make_error("'mode' must be a short string");
        e.mode = mode->get<std::string>();
        return e;
    }
    if (e.type != "step") return e;
    if (auto automatic = j.find("auto"); automatic != j.end()) {
        if (!automatic->is_boolean()) return make_error("'auto' must be true or false");
        e.automatic = automatic->get<bool>();
    }
    Result<std::int64_t> rank = whole(j, "rank", 1 << 20);
    if (!rank.ok()) return rank.error();
    Result<std::int64_t> step = whole(j, "step", INT64_MAX);
    if (!step.ok()) return step.error();
    Result<double> step_ms = non_negative(j, "step_ms", kMaxStepMs);
    if (!step_ms.ok()) return step_ms.error();
    Result<double> wait_ms = non_negative(j, "wait_ms", kMaxStepMs);
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
        e.cuda = figures_of(*data);
    }
    return e;
}

}  // namespace baton::store
