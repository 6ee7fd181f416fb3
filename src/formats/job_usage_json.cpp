#include "formats/job_usage_json.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/base64.hpp"
#include "core/gzip.hpp"

namespace baton::formats {

namespace {

using diagnose::GpuUse;
using diagnose::JobUse;
using diagnose::NodeUse;
using nlohmann::json;

constexpr std::string_view kJs1 = "JS1:";

// One decimal, as jobstats writes its figures ("trim unneeded precision").
double tenth(double v) {
    return std::round(v * 10) / 10;
}

template <class T>
void put_optional(json& o, const char* key, const std::optional<T>& v) {
    if (v) o[key] = *v;
}

// Reads fail with the field's path: "nodes[0].cpu_seconds: expected a number".
struct UseField {
    const json& doc;
    std::string path;
    const json* at(const char* key, bool required) const {
        if (!doc.is_object()) throw std::invalid_argument(path + ": expected an object");
        auto it = doc.find(key);
        if (it == doc.end() || it->is_null()) {
            if (required) throw std::invalid_argument(path + (path.empty() ? "" : ".") + key + ": missing");
            return nullptr;
        }
        return &*it;
    }
    std::string name(const char* key) const { return path + (path.empty() ? "" : ".") + key; }
    std::string string(const char* key, bool required = false) const {
        const json* v = at(key, required);
        if (!v) return {};
        if (!v->is_string()) throw std::invalid_argument(name(key) + ": expected a string");
        return v->get<std::string>();
    }
    std::optional<double> number(const char* key, bool required = false) const {
        const json* v = at(key, required);
        if (!v) return std::nullopt;
        if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0)
            throw std::invalid_argument(name(key) + ": expected a number >= 0");
        return v->get<double>();
    }
    template <class U>
    std::optional<U> whole(const char* key, bool required = false) const {
        const json* v = at(key, required);
        if (!v) return std::nullopt;
        if (!v->is_number_unsigned() || v->get<std::uint64_t>() > std::numeric_limits<U>::max())
            throw std::invalid_argument(name(key) + ": expected a whole number >= 0");
        return static_cast<U>(v->get<std::uint64_t>());
    }
    bool boolean(const char* key) const {
        const json* v = at(key, false);
        if (!v) return false;
        if (!v->is_boolean()) throw std::invalid_argument(name(key) + ": expected true or false");
        return v->get<bool>();
    }
    std::vector<UseField> array(const char* key) const {
        const json* v = at(key, false);
        std::vector<UseField> out;
        if (!v) return out;
        if (!v->is_array() || v->size() > 100000) throw std::invalid_argument(name(key) + ": expected an array");
        for (std::size_t i = 0; i < v->size(); ++i) out.push_back({(*v)[i], name(key) + "[" + std::to_string(i) + "]"});
        return out;
    }
};

}  // namespace

std::string job_use_json(const JobUse& j, const std::vector<std::string>& notes) {
    json job = {{"label", j.label},
                {"kind", j.kind},
                {"id", j.id},
                {"state", j.ended ? "ended" : "running"},
                {"runtime_seconds", tenth(j.runtime_seconds())}};
    for (const auto& [key, value] : {std::pair{"name", &j.name}, std::pair{"user", &j.user},
                                     std::pair{"account", &j.account}, std::pair{"partition", &j.partition}})
        if (!value->empty()) job[key] = *value;
    put_optional(job, "time_limit_seconds", j.time_limit_seconds);
    put_optional(job, "start_time_unix", j.start_time_unix);
    json nodes = json::array();
    for (const NodeUse& n : j.nodes) {
        json node = {{"host", n.host},
                     {"first_unix_ms", n.first_unix_ms},
                     {"last_unix_ms", n.last_unix_ms},
                     {"samples", n.samples},
                     {"node_cpus", n.node_cpus},
                     {"cpu_seconds", tenth(n.cpu_seconds)},
                     {"node_memory_bytes", n.node_memory_bytes},
                     {"memory_peak_bytes", n.memory_peak_bytes}};
        put_optional(node, "cpus", n.cpus);
        put_optional(node, "memory_allocated_bytes", n.memory_allocated_bytes);
        json gpus = json::array();
        for (const GpuUse& g : n.gpus) {
            json o = {{"index", g.index},
                      {"uuid", g.uuid},
                      {"allocated", g.allocated},
                      {"memory_peak_bytes", g.memory_peak_bytes},
                      {"memory_total_bytes", g.memory_total_bytes}};
            put_optional(o, "minor_number", g.minor_number);
            if (g.utilization_percent) o["utilization_percent"] = tenth(*g.utilization_percent);
            if (g.sm_activity_percent) o["sm_activity_percent"] = tenth(*g.sm_activity_percent);
            gpus.push_back(std::move(o));
        }
        node["gpus"] = std::move(gpus);
        nodes.push_back(std::move(node));
    }
    json findings = json::array();
    for (const diagnose::JobFindingSeen& f : j.findings)
        findings.push_back({{"rule", f.rule},
                            {"severity", diagnose::severity_name(f.severity)},
                            {"summary", f.summary},
                            {"first_unix_ms", f.first_unix_ms}});
    return json{
        {"job", std::move(job)}, {"nodes", std::move(nodes)}, {"findings", std::move(findings)}, {"notes", notes}}
        .dump();
}

Result<JobUse> read_job_use(std::string_view text) {
    json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) return Error{"not JSON", ErrorCode::invalid_argument};
    try {
        const UseField root{doc, ""};
        JobUse j;
        const json* job_doc = root.at("job", true);
        const UseField job{*job_doc, "job"};
        j.label = job.string("label", true);
        j.kind = job.string("kind", true);
        j.id = job.string("id", true);
        j.name = job.string("name");
        j.user = job.string("user");
        j.account = job.string("account");
        j.partition = job.string("partition");
        const std::string state = job.string("state", true);
        if (state != "ended" && state != "running") throw std::invalid_argument("job.state: expected ended or running");
        j.ended = state == "ended";
        j.time_limit_seconds = job.number("time_limit_seconds");
        if (const json* start = job.at("start_time_unix", false)) {
            if (!start->is_number_integer()) throw std::invalid_argument("job.start_time_unix: expected an integer");
            j.start_time_unix = start->get<std::int64_t>();
        }
        for (const UseField& n : root.array("nodes")) {
            NodeUse node;
            node.host = n.string("host", true);
            node.first_unix_ms =
                static_cast<std::int64_t>(*n.whole<std::uint64_t>("first_unix_ms", true) & 0x7FFFFFFFFFFFFFFFull);
            node.last_unix_ms =
                static_cast<std::int64_t>(*n.whole<std::uint64_t>("last_unix_ms", true) & 0x7FFFFFFFFFFFFFFFull);
            node.samples = n.whole<std::uint64_t>("samples").value_or(0);
            node.node_cpus = n.whole<unsigned>("node_cpus").value_or(0);
            node.cpus = n.whole<unsigned>("cpus");
            node.cpu_seconds = n.number("cpu_seconds").value_or(0);
            node.node_memory_bytes = n.whole<std::uint64_t>("node_memory_bytes").value_or(0);
            node.memory_allocated_bytes = n.whole<std::uint64_t>("memory_allocated_bytes");
            node.memory_peak_bytes = n.whole<std::uint64_t>("memory_peak_bytes").value_or(0);
            for (const UseField& g : n.array("gpus")) {
                GpuUse gpu;
                gpu.index = *g.whole<unsigned>("index", true);
                gpu.uuid = g.string("uuid");
                gpu.minor_number = g.whole<unsigned>("minor_number");
                gpu.allocated = g.boolean("allocated");
                gpu.utilization_percent = g.number("utilization_percent");
                gpu.sm_activity_percent = g.number("sm_activity_percent");
                gpu.memory_peak_bytes = g.whole<std::uint64_t>("memory_peak_bytes").value_or(0);
                gpu.memory_total_bytes = g.whole<std::uint64_t>("memory_total_bytes").value_or(0);
                node.gpus.push_back(std::move(gpu));
            }
            j.nodes.push_back(std::move(node));
        }
        for (const UseField& f : root.array("findings")) {
            diagnose::JobFindingSeen seen;
            seen.rule = f.string("rule", true);
            const std::string severity = f.string("severity", true);
            if (severity == "critical")
                seen.severity = diagnose::Severity::critical;
            else if (severity == "warning")
                seen.severity = diagnose::Severity::warning;
            else if (severity != "info")
                throw std::invalid_argument(f.path + ".severity: expected info, warning or critical");
            seen.summary = f.string("summary");
            seen.first_unix_ms =
                static_cast<std::int64_t>(f.whole<std::uint64_t>("first_unix_ms").value_or(0) & 0x7FFFFFFFFFFFFFFFull);
            j.findings.push_back(std::move(seen));
        }
        return j;
    } catch (const std::invalid_argument& e) {
        return Error{e.what(), ErrorCode::invalid_argument};
    }
}

std::string jobstats_summary(const JobUse& j) {
    // nlohmann's object keeps its keys sorted: jobstats' `json.dumps(..., sort_keys=True)` order.
    json nodes = json::object();
    unsigned gpus = 0;
    for (const NodeUse& n : j.nodes) {
        json node;
        node["cpus"] = n.cpus.value_or(n.node_cpus);
        node["total_memory"] = n.memory_allocated_bytes.value_or(n.node_memory_bytes);
        node["used_memory"] = n.memory_peak_bytes;
        node["total_time"] = tenth(n.cpu_seconds);
        json total = json::object(), used = json::object(), util = json::object();
        for (const GpuUse& g : n.gpus) {
            // jobstats lists the job's GPUs: those allocated, else (no scheduler said) those it used.
            if (!g.allocated && std::any_of(n.gpus.begin(), n.gpus.end(), [](const GpuUse& o) { return o.allocated; }))
                continue;
            const std::string key = std::to_string(g.minor_number.value_or(g.index));
            total[key] = g.memory_total_bytes;
            used[key] = g.memory_peak_bytes;
            if (g.utilization_percent) util[key] = tenth(*g.utilization_percent);
            ++gpus;
        }
        if (!total.empty()) {
            node["gpu_total_memory"] = std::move(total);
            node["gpu_used_memory"] = std::move(used);
            if (!util.empty()) node["gpu_utilization"] = std::move(util);
        }
        nodes[n.host] = std::move(node);
    }
    return json{{"gpus", gpus},
                {"nodes", std::move(nodes)},
                {"total_time", static_cast<std::int64_t>(std::llround(j.runtime_seconds()))}}
        .dump();
}

std::string js1_admin_comment(const JobUse& j) {
    return std::string(kJs1) + base64_encode(gzip_compress(jobstats_summary(j)));
}

Result<std::string> decode_js1(std::string_view admin_comment) {
    if (admin_comment.substr(0, kJs1.size()) != kJs1)
        return Error{"not a JS1 summary (it starts with JS1:)", ErrorCode::invalid_argument};
    std::optional<std::string> packed = base64_decode(admin_comment.substr(kJs1.size()));
    if (!packed) return Error{"JS1 summary: not base64", ErrorCode::invalid_argument};
    std::optional<std::string> text = gzip_decompress(*packed, 16 << 20);
    if (!text) return Error{"JS1 summary: not gzip (or over 16 MiB inflated)", ErrorCode::invalid_argument};
    if (json::parse(*text, nullptr, false).is_discarded())
        return Error{"JS1 summary: not JSON", ErrorCode::invalid_argument};
    return *text;
}

}  // namespace baton::formats
