#include "queue/protocol.hpp"

#include <array>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/base64.hpp"

namespace baton::queue {

namespace {

constexpr const char* kOps[] = {"submit", "list",      "show",         "cancel", "hold",   "release", "retry",
                                "wait",   "logs",      "info",         "pause",  "resume", "restart", "clean",
                                "groups", "group_set", "group_remove", "edit",   "usage"};

// Job ids are positive and fit in SQLite's integer; a request naming another is refused.
bool job_id_of(const nlohmann::json& v, std::int64_t& out) {
    if (!v.is_number_integer()) return false;
    const std::int64_t id = v.get<std::int64_t>();
    if (id <= 0) return false;
    out = id;
    return true;
}

// A submission's "array": as many values as indices, each index a number from 0, at most
// kMaxArrayElements of them.
Status read_array(const nlohmann::json& a, JobArray& out) {
    const Error wrong = make_error("the request's \"array\" is not indices with as many values");
    if (!a.is_object() || !a.contains("indices") || !a["indices"].is_array() || !a.contains("values") ||
        !a["values"].is_string())
        return wrong;
    if (a["indices"].empty() || a["indices"].size() > kMaxArrayElements)
        return make_error("the request's \"array\" holds no elements or more than " +
                          std::to_string(kMaxArrayElements));
    for (const auto& i : a["indices"]) {
        if (!i.is_number_integer() || i.get<std::int64_t>() < 0) return wrong;
        out.indices.push_back(i.get<std::int64_t>());
    }
    Result<std::vector<std::string>> values = unpack_base64(a["values"].get<std::string>());
    if (!values.ok() || values->size() != out.indices.size()) return wrong;
    out.values = std::move(*values);
    if (a.contains("append")) {
        if (!a["append"].is_boolean()) return wrong;
        out.append = a["append"].get<bool>();
    }
    return Ok{};
}

}  // namespace

const char* op_name(Op op) {
    return kOps[static_cast<int>(op)];
}

std::string pack_base64(const std::vector<std::string>& strings) {
    std::string packed;
    for (const std::string& s : strings) {
        packed.append(s, 0, s.find('\0'));
        packed.push_back('\0');
    }
    return base64_encode(packed);
}

Result<std::vector<std::string>> unpack_base64(std::string_view text) {
    std::optional<std::string> packed = base64_decode(text);
    if (!packed) return make_error("not base64");
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < packed->size()) {
        const std::size_t end = packed->find('\0', at);
        if (end == std::string::npos) return make_error("a string without its NUL end");
        out.push_back(packed->substr(at, end - at));
        at = end + 1;
    }
    return out;
}

std::string request_line(const Request& r) {
    nlohmann::json j;
    j["op"] = op_name(r.op);
    switch (r.op) {
        case Op::submit: {
            const Submission& s = r.submit;
            std::vector<std::string> env;
            for (const auto& [k, v] : s.env) env.push_back(k + "=" + v);
            j["name"] = s.name;
            j["argv"] = pack_base64(s.argv);
            j["cwd"] = base64_encode(s.cwd);
            j["env"] = pack_base64(env);
            j["request"] = nlohmann::json::parse(request_json(s.request));
            j["gpu_list"] = s.gpu_list;
            j["gpu_memory"] = s.gpu_memory_text;
            j["priority"] = s.priority;
            j["after"] = s.after;
            j["after_ok"] = s.after_ok;
            j["hold"] = s.hold;
            j["default_cpus"] = s.default_cpus;
            if (!s.array.empty())
                j["array"] = {
                    {"indices", s.array.indices}, {"values", pack_base64(s.array.values)}, {"append", s.array.append}};
            break;
        }
        case Op::group_set:
            j["group"] = r.group;
            j["parallel"] = r.parallel;
            break;
        case Op::group_remove:
            j["group"] = r.group;
            break;
        case Op::groups:
            break;
        case Op::usage:
            j["since_ms"] = r.since_ms;
            j["user"] = r.user;
            break;
        case Op::edit:
            j["job"] = r.jobs.empty() ? 0 : r.jobs.front();
            j["edit"] = edit_json(r.edit);
            break;
        case Op::list:
            j["all"] = r.all;
            break;
        case Op::clean:
            j["successful_only"] = r.successful_only;
            break;
        case Op::info:
            break;
        case Op::cancel:
            j["jobs"] = r.jobs;
            j["grace_seconds"] = r.grace_seconds;
            break;
        case Op::logs:
            j["job"] = r.jobs.empty() ? 0 : r.jobs.front();
            j["stream"] = r.stderr_stream ? "stderr" : "stdout";
            j["offset"] = r.offset;
            break;
        default:
            j["job"] = r.jobs.empty() ? 0 : r.jobs.front();
    }
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<Request> parse_request(std::string_view line) {
    if (line.size() > kMaxRequestBytes)
        return make_error("the request is longer than " + std::to_string(kMaxRequestBytes) + " bytes");
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) return make_error("a request is one JSON object on one line");
    if (!j.contains("op") || !j["op"].is_string()) return make_error("the request has no \"op\"");
    Request r;
    const std::string op = j["op"].get<std::string>();
    bool known = false;
    for (int k = 0; k < static_cast<int>(std::size(kOps)); ++k)
        if (op == kOps[k]) {
            r.op = static_cast<Op>(k);
            known = true;
        }
    if (!known)
        return make_error(
            "no request \"" + op +
            "\" (known: submit, list, show, cancel, hold, release, retry, wait, logs, info, pause, resume, restart, "
            "clean, groups, group_set, group_remove, edit, usage)");

    std::string bad;  // the first field of the wrong type
    auto string_of = [&](const char* key, std::string& out) {
        if (!j.contains(key)) return;
        if (j[key].is_string())
            out = j[key].get<std::string>();
        else if (bad.empty())
            bad = key;
    };
    auto bool_of = [&](const char* key, bool& out) {
        if (!j.contains(key)) return;
        if (j[key].is_boolean())
            out = j[key].get<bool>();
        else if (bad.empty())
            bad = key;
    };
    auto one_job = [&]() {
        std::int64_t id = 0;
        if (!j.contains("job") || !job_id_of(j["job"], id)) {
            if (bad.empty()) bad = "job";
            return;
        }
        r.jobs.push_back(id);
    };

    switch (r.op) {
        case Op::submit: {
            Submission& s = r.submit;
            string_of("name", s.name);
            string_of("gpu_list", s.gpu_list);
            string_of("gpu_memory", s.gpu_memory_text);
            bool_of("after_ok", s.after_ok);
            bool_of("hold", s.hold);
            bool_of("default_cpus", s.default_cpus);
            std::string argv, cwd, env;
            string_of("argv", argv);
            string_of("cwd", cwd);
            string_of("env", env);
            if (!bad.empty()) break;
            Result<std::vector<std::string>> a = unpack_base64(argv);
            if (!a.ok() || a->empty() || a->front().empty())
                return make_error("the request's \"argv\" names no command");
            s.argv = std::move(*a);
            std::optional<std::string> c = base64_decode(cwd);
            if (!c || c->empty() || c->front() != '/' || c->find('\0') != std::string::npos)
                return make_error("the request's \"cwd\" is not an absolute path");
            s.cwd = std::move(*c);
            Result<std::vector<std::string>> e = unpack_base64(env);
            if (!e.ok()) return make_error("the request's \"env\" is not base64 of NUL-ended strings");
            for (const std::string& kv : *e) {
                const std::size_t eq = kv.find('=');
                if (eq == 0 || eq == std::string::npos) continue;  // not NAME=value: no program could read it either
                s.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
            }
            if (!j.contains("request")) return make_error("the request has no \"request\"");
            Result<JobRequest> q = parse_request_json(j["request"].dump());
            if (!q.ok()) return q.error();
            s.request = *q;
            if (j.contains("priority")) {
                if (!j["priority"].is_number_integer() || std::abs(j["priority"].get<std::int64_t>()) > 1000000)
                    bad = "priority";
                else
                    s.priority = j["priority"].get<int>();
            }
            if (j.contains("after")) {
                if (!j["after"].is_array() || j["after"].size() > 10000) {
                    if (bad.empty()) bad = "after";
                } else {
                    for (const auto& v : j["after"]) {
                        std::int64_t id = 0;
                        if (!job_id_of(v, id)) {
                            if (bad.empty()) bad = "after";
                            break;
                        }
                        s.after.push_back(id);
                    }
                }
            }
            if (j.contains("array") && bad.empty()) {
                if (Status read = read_array(j["array"], s.array); !read.ok()) return read.error();
            }
            break;
        }
        case Op::group_set:
            string_of("group", r.group);
            if (!j.contains("parallel") || !j["parallel"].is_number_unsigned() ||
                j["parallel"].get<std::uint64_t>() == 0 || j["parallel"].get<std::uint64_t>() > 1000000) {
                if (bad.empty()) bad = "parallel";
            } else {
                r.parallel = j["parallel"].get<unsigned>();
            }
            if (r.group.empty() && bad.empty()) bad = "group";
            break;
        case Op::group_remove:
            string_of("group", r.group);
            if (r.group.empty() && bad.empty()) bad = "group";
            break;
        case Op::groups:
            break;
        case Op::usage:
            if (j.contains("since_ms")) {
                if (!j["since_ms"].is_number_integer() || j["since_ms"].get<std::int64_t>() < 0)
                    bad = "since_ms";
                else
                    r.since_ms = j["since_ms"].get<std::int64_t>();
            }
            string_of("user", r.user);
            break;
        case Op::edit: {
            one_job();
            if (!bad.empty()) break;
            if (!j.contains("edit")) return make_error("the request has no \"edit\"");
            Result<JobEdit> e = parse_edit_json(j["edit"]);
            if (!e.ok()) return e.error();
            r.edit = std::move(*e);
            break;
        }
        case Op::list:
            bool_of("all", r.all);
            break;
        case Op::clean:
            bool_of("successful_only", r.successful_only);
            break;
        case Op::info:
            break;
        case Op::cancel:
            if (!j.contains("jobs") || !j["jobs"].is_array() || j["jobs"].empty() || j["jobs"].size() > 100000) {
                bad = "jobs";
                break;
            }
            for (const auto& v : j["jobs"]) {
                std::int64_t id = 0;
                if (!job_id_of(v, id)) {
                    bad = "jobs";
                    break;
                }
                r.jobs.push_back(id);
            }
            if (j.contains("grace_seconds")) {
                const auto& g = j["grace_seconds"];
                if (!g.is_number() || !std::isfinite(g.get<double>()) || g.get<double>() < 0 || g.get<double>() > 86400)
                    bad = "grace_seconds";
                else
                    r.grace_seconds = g.get<double>();
            }
            break;
        case Op::logs: {
            one_job();
            std::string stream = "stdout";
            string_of("stream", stream);
            if (stream != "stdout" && stream != "stderr" && bad.empty()) bad = "stream";
            r.stderr_stream = stream == "stderr";
            if (j.contains("offset")) {
                if (!j["offset"].is_number_unsigned())
                    bad = "offset";
                else
                    r.offset = j["offset"].get<std::uint64_t>();
            }
            break;
        }
        default:
            one_job();
    }
    if (!bad.empty()) return make_error("the request's \"" + bad + "\" is missing or has the wrong type");
    return r;
}

namespace {

// Compact, invalid UTF-8 replaced (an error message or a path may carry any bytes), newline-ended.
std::string encode_line(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string answer_line(const nlohmann::json& fields) {
    nlohmann::json j = fields.is_object() ? fields : nlohmann::json::object();
    j["ok"] = true;
    return encode_line(j);
}

std::string answer_line_with(std::string_view key, std::string_view encoded_json) {
    std::string line = "{\"ok\":true,";
    line += nlohmann::json(std::string(key)).dump();
    line += ':';
    line += encoded_json;
    line += "}\n";
    return line;
}

std::string refusal_line(const Error& e) {
    return encode_line({{"ok", false}, {"error", e.message}, {"code", error_code_name(e.code)}});
}

Result<nlohmann::json> parse_answer_line(std::string_view line) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) return make_error("the agent's answer is not a JSON object");
    const auto ok = j.find("ok");
    if (ok == j.end() || !ok->is_boolean() || !ok->get<bool>()) {
        const auto code = j.find("code");
        const auto error = j.find("error");
        return make_error(
            code != j.end() && code->is_string()
                ? error_code_from_name(code->get<std::string>()).value_or(ErrorCode::failed)
                : ErrorCode::failed,
            error != j.end() && error->is_string() ? error->get<std::string>() : std::string("the agent refused"));
    }
    return j;
}

}  // namespace baton::queue
