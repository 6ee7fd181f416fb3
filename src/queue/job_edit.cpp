#include "queue/job_edit.hpp"

#include <nlohmann/json.hpp>

#include "queue/job_request.hpp"
#include "queue/protocol.hpp"

namespace baton::queue {

namespace {

Error edit_error(std::string message) {
    return make_error(ErrorCode::invalid_argument, std::move(message));
}

}  // namespace

Result<JobEdit> edit_of(const EditFlags& f, const std::vector<std::string>& argv) {
    JobEdit e;
    if (!argv.empty()) {
        if (argv.front().empty()) return edit_error("edit: the command's first word is empty");
        e.argv = argv;
    }
    if (f.name) e.name = *f.name;
    e.priority = f.priority;
    if (f.after) {
        if (f.after->empty()) {
            e.after = std::vector<std::int64_t>{};  // --after "": no dependencies any more
        } else {
            Result<After> after = parse_after(*f.after);
            if (!after.ok()) return edit_error("--after " + *f.after + ": " + after.error().message);
            e.after = after->jobs;
            e.after_ok = after->ok;
        }
    }
    if (f.gpus && f.gpu) return edit_error("--gpus and --gpu: give one (a count, or the GPUs themselves)");
    e.gpus = f.gpus;
    if (f.gpu) {
        if (f.gpu->empty()) return edit_error("--gpu: name the GPUs (indices or UUIDs), or give --gpus N");
        e.gpu_list = *f.gpu;
    }
    if (f.gpu_mem) {
        if (*f.gpu_mem == "0" || f.gpu_mem->empty()) {
            e.gpu_memory_bytes = 0;
        } else {
            std::optional<std::uint64_t> b = parse_size(*f.gpu_mem);
            if (!b) return edit_error("--gpu-mem " + *f.gpu_mem + ": a size like 20G, 512M or 1.5T (0: none)");
            e.gpu_memory_bytes = *b;
        }
    }
    if (f.cpus) {
        if (*f.cpus < 0) return edit_error("--cpus " + std::to_string(*f.cpus) + ": a count from 0");
        e.cpus = static_cast<unsigned>(*f.cpus);
    }
    if (f.mem) {
        std::optional<std::uint64_t> b =
            f.mem->empty() || *f.mem == "0" ? std::optional<std::uint64_t>(0) : parse_size(*f.mem);
        if (!b) return edit_error("--mem " + *f.mem + ": a size like 64G or 512M (0: none)");
        e.memory_bytes = *b;
    }
    if (f.group) {
        if (!f.group->empty()) {
            if (Status ok = check_group_name(*f.group); !ok.ok()) return edit_error("--group: " + ok.error().message);
        }
        e.group = *f.group;
    }
    if (e.empty())
        return edit_error(
            "edit: nothing to change (give --gpus, --gpu, --gpu-mem, --cpus, --mem, --priority, --after, --name, "
            "--group, or -- CMD ARGS...)");
    return e;
}

nlohmann::json edit_json(const JobEdit& e) {
    nlohmann::json j = nlohmann::json::object();
    if (e.argv) j["argv"] = pack_base64(*e.argv);
    if (e.name) j["name"] = *e.name;
    if (e.priority) j["priority"] = *e.priority;
    if (e.after) {
        j["after"] = *e.after;
        j["after_ok"] = e.after_ok;
    }
    if (e.gpus) j["gpus"] = *e.gpus;
    if (e.gpu_list) j["gpu_list"] = *e.gpu_list;
    if (e.gpu_memory_bytes) j["gpu_memory_bytes"] = *e.gpu_memory_bytes;
    if (e.cpus) j["cpus"] = *e.cpus;
    if (e.memory_bytes) j["memory_bytes"] = *e.memory_bytes;
    if (e.group) j["group"] = *e.group;
    return j;
}

Result<JobEdit> parse_edit_json(const nlohmann::json& j) {
    if (!j.is_object()) return make_error("the request's \"edit\" is not an object");
    JobEdit e;
    std::string bad;
    auto count = [&](const char* key, std::optional<unsigned>& out, std::uint64_t max) {
        if (!j.contains(key)) return;
        if (!j[key].is_number_unsigned() || j[key].get<std::uint64_t>() > max)
            bad = key;
        else
            out = j[key].get<unsigned>();
    };
    auto bytes = [&](const char* key, std::optional<std::uint64_t>& out) {
        if (!j.contains(key)) return;
        if (!j[key].is_number_unsigned())
            bad = key;
        else
            out = j[key].get<std::uint64_t>();
    };
    auto text = [&](const char* key, std::optional<std::string>& out) {
        if (!j.contains(key)) return;
        if (!j[key].is_string())
            bad = key;
        else
            out = j[key].get<std::string>();
    };
    if (j.contains("argv")) {
        Result<std::vector<std::string>> a =
            j["argv"].is_string() ? unpack_base64(j["argv"].get<std::string>()) : make_error("not a string");
        if (!a.ok() || a->empty() || a->front().empty()) return make_error("the edit's \"argv\" names no command");
        e.argv = std::move(*a);
    }
    text("name", e.name);
    if (j.contains("priority")) {
        if (!j["priority"].is_number_integer() || std::llabs(j["priority"].get<std::int64_t>()) > 1000000)
            bad = "priority";
        else
            e.priority = j["priority"].get<int>();
    }
    if (j.contains("after")) {
        std::vector<std::int64_t> after;
        if (!j["after"].is_array() || j["after"].size() > 10000) bad = "after";
        for (const auto& v : j["after"]) {
            if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) {
                bad = "after";
                break;
            }
            after.push_back(v.get<std::int64_t>());
        }
        e.after = std::move(after);
        if (j.contains("after_ok")) {
            if (!j["after_ok"].is_boolean())
                bad = "after_ok";
            else
                e.after_ok = j["after_ok"].get<bool>();
        }
    }
    count("gpus", e.gpus, 4096);
    text("gpu_list", e.gpu_list);
    bytes("gpu_memory_bytes", e.gpu_memory_bytes);
    count("cpus", e.cpus, 1u << 20);
    bytes("memory_bytes", e.memory_bytes);
    text("group", e.group);
    if (!bad.empty()) return make_error("the edit's \"" + bad + "\" has the wrong type or value");
    if (e.empty()) return make_error("the edit changes nothing");
    return e;
}

}  // namespace baton::queue
