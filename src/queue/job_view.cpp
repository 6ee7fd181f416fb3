#include "queue/job_view.hpp"

#include <type_traits>

namespace baton::queue {

using nlohmann::json;

json job_view_json(const JobView& j) {
    json o;
    o["id"] = j.id;
    o["owner_uid"] = j.owner_uid;
    o["owner"] = j.owner;
    o["name"] = j.name;
    o["state"] = store::state_name(j.state);
    o["priority"] = j.priority;
    o["argv"] = j.argv;
    o["cwd"] = j.cwd;
    if (j.ask) {
        const Resources& w = j.ask->want;
        json want;
        want["gpus"] = gpus_asked(w);
        if (!w.gpu_uuids.empty()) want["gpu_uuids"] = w.gpu_uuids;
        if (w.gpu_memory_bytes) want["gpu_memory_bytes"] = *w.gpu_memory_bytes;
        want["share"] = w.share;
        want["cpus"] = w.cpus;
        want["memory_bytes"] = w.memory_bytes;
        o["want"] = want;
        o["retries"] = j.ask->retries;
        o["on_oom"] = j.ask->on_oom == OnOom::retry ? "retry" : "fail";
        if (!j.ask->group.empty()) o["group"] = j.ask->group;
        if (j.ask->max_parallel) o["max_parallel"] = j.ask->max_parallel;
    }
    if (j.array_id) o["array_id"] = *j.array_id;
    if (j.array_index) o["array_index"] = *j.array_index;
    o["gpus"] = j.gpus;
    o["gpu_indices"] = j.gpu_indices;
    o["cpus"] = j.cpus;
    o["after"] = j.after;
    o["after_ok"] = j.after_ok;
    o["attempt"] = j.attempt;
    o["submit_ms"] = j.submit_ms;
    if (j.start_ms) o["start_ms"] = *j.start_ms;
    if (j.end_ms) o["end_ms"] = *j.end_ms;
    if (j.exit_status) o["exit_status"] = *j.exit_status;
    if (j.pid) o["pid"] = *j.pid;
    if (j.run_id) o["run_id"] = *j.run_id;
    if (j.paused_ms) o["paused_ms"] = *j.paused_ms;
    if (!j.note.empty()) o["note"] = j.note;
    if (!j.waiting.empty()) o["waiting"] = j.waiting;
    return o;
}

namespace {

// The field `key` of `o` as T: required ones must be there, optional ones may be absent (or null).
template <typename T>
Status take(const json& o, const char* key, T& out, bool required = true) {
    const auto it = o.find(key);
    if (it == o.end() || it->is_null()) {
        if (!required) return Ok{};
        return make_error(ErrorCode::invalid_argument, std::string("the job has no \"") + key + "\"");
    }
    const Error wrong =
        make_error(ErrorCode::invalid_argument, std::string("the job's \"") + key + "\" has the wrong type");
    // nlohmann converts numbers freely (-1 to a huge unsigned, 2.5 to 2): integers are checked here.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (!it->is_number_integer()) return wrong;
        if (std::is_unsigned_v<T> && !it->is_number_unsigned() && it->get<std::int64_t>() < 0) return wrong;
    }
    try {
        out = it->get<T>();
    } catch (const json::exception&) {
        return wrong;
    }
    return Ok{};
}

template <typename T>
Status take_optional(const json& o, const char* key, std::optional<T>& out) {
    if (!o.contains(key) || o[key].is_null()) return Ok{};
    T v{};
    if (Status s = take(o, key, v); !s.ok()) return s;
    out = v;
    return Ok{};
}

Result<JobView::Ask> parse_ask(const json& o) {
    JobView::Ask a;
    const json& w = o["want"];
    if (!w.is_object()) return make_error(ErrorCode::invalid_argument, "the job's \"want\" has the wrong type");
    for (Status s : {take(w, "gpus", a.want.gpus), take(w, "gpu_uuids", a.want.gpu_uuids, false),
                     take_optional(w, "gpu_memory_bytes", a.want.gpu_memory_bytes), take(w, "share", a.want.share),
                     take(w, "cpus", a.want.cpus), take(w, "memory_bytes", a.want.memory_bytes),
                     take(o, "retries", a.retries, false), take(o, "group", a.group, false),
                     take(o, "max_parallel", a.max_parallel, false)})
        if (!s.ok()) return s.error();
    std::string on_oom = "fail";
    if (Status s = take(o, "on_oom", on_oom, false); !s.ok()) return s.error();
    a.on_oom = on_oom == "retry" ? OnOom::retry : OnOom::fail;
    return a;
}

}  // namespace

Result<JobView> parse_job_view(const json& o) {
    if (!o.is_object()) return make_error(ErrorCode::invalid_argument, "a job is a JSON object");
    JobView j;
    std::string state;
    for (Status s : {take(o, "id", j.id),
                     take(o, "owner_uid", j.owner_uid),
                     take(o, "owner", j.owner),
                     take(o, "name", j.name),
                     take(o, "state", state),
                     take(o, "priority", j.priority, false),
                     take(o, "argv", j.argv),
                     take(o, "cwd", j.cwd),
                     take(o, "gpus", j.gpus, false),
                     take(o, "gpu_indices", j.gpu_indices, false),
                     take(o, "cpus", j.cpus, false),
                     take(o, "after", j.after, false),
                     take(o, "after_ok", j.after_ok, false),
                     take(o, "attempt", j.attempt, false),
                     take(o, "submit_ms", j.submit_ms, false),
                     take_optional(o, "start_ms", j.start_ms),
                     take_optional(o, "end_ms", j.end_ms),
                     take_optional(o, "exit_status", j.exit_status),
                     take_optional(o, "pid", j.pid),
                     take_optional(o, "run_id", j.run_id),
                     take_optional(o, "paused_ms", j.paused_ms),
                     take(o, "note", j.note, false),
                     take(o, "waiting", j.waiting, false),
                     take_optional(o, "array_id", j.array_id),
                     take_optional(o, "array_index", j.array_index)})
        if (!s.ok()) return s.error();
    const std::optional<store::JobState> known = store::state_from_name(state);
    if (!known)
        return make_error(ErrorCode::invalid_argument, "the job's state \"" + state + "\" is not one baton knows");
    j.state = *known;
    if (o.contains("want")) {
        Result<JobView::Ask> a = parse_ask(o);
        if (!a.ok()) return a.error();
        j.ask = *a;
    }
    return j;
}

}  // namespace baton::queue
