#include "queue/job_request.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "core/text_parse.hpp"

namespace baton::queue {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    for (;;) {
        const std::size_t at = s.find(sep);
        out.push_back(trim(s.substr(0, at)));
        if (at == std::string_view::npos) return out;
        s.remove_prefix(at + 1);
    }
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Result<After> parse_after(std::string_view text) {
    After a;
    text = trim(text);
    if (text.size() >= 3 && text.substr(text.size() - 3) == ":ok") {
        a.ok = true;
        text.remove_suffix(3);
    }
    for (std::string_view id : split(text, ',')) {
        const std::optional<std::int64_t> job = text::parse_digits<std::int64_t>(id);
        if (!job)
            return make_error(
                "--after takes job ids separated by commas, with :ok to need their success (e.g. "
                "12,14:ok), not '" +
                std::string(id) + "'");
        a.jobs.push_back(*job);
    }
    return a;
}

Result<std::vector<std::string>> resolve_gpus(std::string_view text, const Pool& pool) {
    std::vector<std::string> out;
    for (std::string_view id : split(text, ',')) {
        std::vector<const PoolGpu*> match;
        for (const PoolGpu& g : pool.gpus) {
            if (all_digits(id) ? id.size() <= 4 && text::parse_digits<unsigned>(id) == g.index
                               : id.size() >= 8 && g.uuid.compare(0, id.size(), id) == 0)
                match.push_back(&g);
        }
        if (match.size() != 1) {
            std::string known;
            for (const PoolGpu& g : pool.gpus) known += (known.empty() ? "" : ", ") + std::to_string(g.index);
            return make_error("--gpu '" + std::string(id) + "' " +
                              (match.empty() ? "is not a GPU this queue may use" : "names more than one GPU") +
                              " (its GPUs: " + (known.empty() ? "none" : known) +
                              "; give an index as nvidia-smi numbers it, or a UUID)");
        }
        if (std::find(out.begin(), out.end(), match[0]->uuid) == out.end()) out.push_back(match[0]->uuid);
    }
    return out;
}

std::string request_json(const JobRequest& r) {
    nlohmann::json j;
    j["gpus"] = r.want.gpus;
    j["gpu_uuids"] = r.want.gpu_uuids;
    if (r.want.gpu_memory_bytes) j["gpu_memory_bytes"] = *r.want.gpu_memory_bytes;
    j["gpu_memory_auto"] = r.gpu_memory_auto;
    j["share"] = r.want.share;
    j["cpus"] = r.want.cpus;
    j["memory_bytes"] = r.want.memory_bytes;
    j["retries"] = r.retries;
    j["on_oom"] = r.on_oom == OnOom::retry ? "retry" : "fail";
    j["slurm"] = r.slurm;
    if (r.not_before_ms) j["not_before_ms"] = *r.not_before_ms;
    if (!r.group.empty()) j["group"] = r.group;
    if (r.max_parallel) j["max_parallel"] = r.max_parallel;
    if (!r.on_end.empty()) j["on_end"] = r.on_end;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<JobRequest> parse_request_json(std::string_view text) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) return make_error("a job request is a JSON object");
    JobRequest r;
    std::string bad;
    auto unsigned_of = [&](const char* key, unsigned& out) {
        if (!j.contains(key)) return;
        if (!j[key].is_number_unsigned() || j[key].get<std::uint64_t>() > 1u << 20)
            bad = key;
        else
            out = j[key].get<unsigned>();
    };
    auto bool_of = [&](const char* key, bool& out) {
        if (!j.contains(key)) return;
        if (!j[key].is_boolean())
            bad = key;
        else
            out = j[key].get<bool>();
    };
    unsigned_of("gpus", r.want.gpus);
    unsigned_of("cpus", r.want.cpus);
    unsigned_of("retries", r.retries);
    unsigned_of("max_parallel", r.max_parallel);
    for (auto [key, out] : {std::pair{"group", &r.group}, std::pair{"on_end", &r.on_end}}) {
        if (!j.contains(key)) continue;
        if (!j[key].is_string())
            bad = key;
        else
            *out = j[key].get<std::string>();
    }
    bool_of("share", r.want.share);
    bool_of("gpu_memory_auto", r.gpu_memory_auto);
    bool_of("slurm", r.slurm);
    if (j.contains("gpu_uuids")) {
        if (!j["gpu_uuids"].is_array()) bad = "gpu_uuids";
        for (const auto& u : j["gpu_uuids"]) {
            if (!u.is_string()) {
                bad = "gpu_uuids";
                break;
            }
            r.want.gpu_uuids.push_back(u.get<std::string>());
        }
    }
    if (j.contains("gpu_memory_bytes")) {
        if (!j["gpu_memory_bytes"].is_number_unsigned())
            bad = "gpu_memory_bytes";
        else
            r.want.gpu_memory_bytes = j["gpu_memory_bytes"].get<std::uint64_t>();
    }
    if (j.contains("memory_bytes")) {
        if (!j["memory_bytes"].is_number_unsigned())
            bad = "memory_bytes";
        else
            r.want.memory_bytes = j["memory_bytes"].get<std::uint64_t>();
    }
    if (j.contains("not_before_ms") && !j["not_before_ms"].is_null()) {
        if (!j["not_before_ms"].is_number_integer() || j["not_before_ms"].get<std::int64_t>() < 0)
            bad = "not_before_ms";
        else
            r.not_before_ms = j["not_before_ms"].get<std::int64_t>();
    }
    if (j.contains("on_oom")) {
        if (j["on_oom"] == "retry")
            r.on_oom = OnOom::retry;
        else if (j["on_oom"] != "fail")
            bad = "on_oom";
    }
    if (!bad.empty()) return make_error("a job request's '" + bad + "' has the wrong type or value");
    return r;
}

Status check_group_name(std::string_view name) {
    const bool ok =
        !name.empty() && name.size() <= 64 && name.front() != '-' && std::all_of(name.begin(), name.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                   c == '-';
        });
    if (ok) return Ok{};
    return make_error(
        ErrorCode::invalid_argument,
        "group '" + printable(name) + "': a group's name is 1 to 64 letters, digits, '.', '_' or '-' (not first)");
}

Result<std::int64_t> parse_delay(std::string_view text, std::int64_t now_ms) {
    const std::optional<double> seconds = parse_duration(text);
    if (!seconds || *seconds < 0 || *seconds > 366.0 * 86400)
        return make_error(ErrorCode::invalid_argument,
                          "--delay " + std::string(text) + ": a duration up to a year, like 90s, 30m, 2h or 1d");
    return now_ms + static_cast<std::int64_t>(*seconds * 1000);
}

Result<std::int64_t> parse_at(std::string_view text, std::int64_t now_ms) {
    const Error bad =
        make_error(ErrorCode::invalid_argument,
                   "--at " + std::string(text) + ": a local time HH:MM[:SS] (the next one), or YYYY-MM-DD HH:MM[:SS]");
    std::tm t{};
    const std::time_t now = static_cast<std::time_t>(now_ms / 1000);
    localtime_r(&now, &t);
    std::string s(text);
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    char sep = 0, tail = 0;
    bool dated = false;
    if (std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%c", &year, &month, &day, &sep, &hour, &minute, &second,
                    &tail) == 7 ||
        (second = 0,
         std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d%c", &year, &month, &day, &sep, &hour, &minute, &tail) == 6)) {
        if (sep != ' ' && sep != 'T') return bad;
        dated = true;
    } else if (std::sscanf(s.c_str(), "%2d:%2d:%2d%c", &hour, &minute, &second, &tail) == 3 ||
               (second = 0, std::sscanf(s.c_str(), "%2d:%2d%c", &hour, &minute, &tail) == 2)) {
    } else {
        return bad;
    }
    if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return bad;
    if (dated && (month < 1 || month > 12 || day < 1 || day > 31 || year < 1970 || year > 9999)) return bad;
    if (dated) {
        t.tm_year = year - 1900;
        t.tm_mon = month - 1;
        t.tm_mday = day;
    }
    t.tm_hour = hour;
    t.tm_min = minute;
    t.tm_sec = second;
    t.tm_isdst = -1;  // whatever the local zone says for that day
    std::time_t at = std::mktime(&t);
    if (at == static_cast<std::time_t>(-1)) return bad;
    if (dated && t.tm_mday != day) return bad;  // (mktime moved 31 February on to March)
    if (!dated && at <= now) {
        ++t.tm_mday;  // already past today: the same time tomorrow
        t.tm_hour = hour;
        t.tm_min = minute;
        t.tm_sec = second;
        t.tm_isdst = -1;
        at = std::mktime(&t);
    }
    return static_cast<std::int64_t>(at) * 1000;
}

Status check_request(const JobRequest& r, const Pool& pool) {
    const auto refused = [](std::string why) { return make_error(ErrorCode::invalid_argument, std::move(why)); };
    const bool wants_gpus = r.want.gpus > 0 || !r.want.gpu_uuids.empty();
    if (r.want.share && !wants_gpus) return refused("--share needs GPUs to share");
    if (r.want.share && !r.want.gpu_memory_bytes && !r.gpu_memory_auto)
        return refused(
            "--share needs the memory each GPU must keep for the job: --gpu-mem 20G, or --gpu-mem auto with --name");
    if ((r.want.gpu_memory_bytes || r.gpu_memory_auto) && !wants_gpus)
        return refused("--gpu-mem needs --gpus or --gpu");
    // GPUs that cannot be read now (a hung driver) may be later: the job waits for them.
    if (wants_gpus && !pool.gpus_known && pool.no_gpus.empty()) return Ok{};
    if (std::string never = never_fits(r.want, pool); !never.empty()) return refused(std::move(never));
    return Ok{};
}

}  // namespace baton::queue
