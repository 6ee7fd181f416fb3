#include "queue/job_text.hpp"

#include <algorithm>
#include <climits>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/printable.hpp"

namespace baton::queue {

using nlohmann::json;

Result<std::int64_t> parse_job_id(const std::string& word) {
    std::int64_t id = 0;
    for (char c : word) {
        if (c < '0' || c > '9' || id > (INT64_MAX - 9) / 10)
            return make_error(ErrorCode::invalid_argument, "'" + word + "' is not a job id (baton queue lists them)");
        id = id * 10 + (c - '0');
    }
    if (word.empty() || id == 0)
        return make_error(ErrorCode::invalid_argument, "'" + word + "' is not a job id (baton queue lists them)");
    return id;
}

namespace {

// A word as a shell would need it typed: 'two words' quoted, plain words as they are.
std::string shell_quoted(const std::string& word) {
    const std::string w = printable(word);
    if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:=+@%") ==
                          std::string::npos)
        return w;
    std::string out = "'";
    for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// "1h02m", "3m05s", "42s", "-".
std::string span(std::optional<std::int64_t> from_ms, std::optional<std::int64_t> to_ms) {
    if (!from_ms) return "-";
    const std::int64_t s = std::max<std::int64_t>(0, (to_ms.value_or(unix_millis()) - *from_ms) / 1000);
    if (s >= 86400) return fmt::format("{}d{:02}h", s / 86400, s % 86400 / 3600);
    if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
    if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
    return fmt::format("{}s", s);
}

std::optional<std::int64_t> opt_ms(const json& j, const char* key) {
    if (j.contains(key) && j[key].is_number_integer()) return j[key].get<std::int64_t>();
    return std::nullopt;
}

std::string join(const json& array) {
    std::string out;
    for (const auto& v : array) out += (out.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : v.dump());
    return out;
}

// The GPUs column: the indices it holds, or how many it waits for.
std::string gpus_cell(const json& j) {
    if (j.contains("slurm_id"))
        return j.value("gpus_count", 0u) ? std::to_string(j["gpus_count"].get<unsigned>()) : "-";
    if (!j.value("gpu_indices", json::array()).empty()) return join(j["gpu_indices"]);
    if (!j.value("gpus", json::array()).empty()) return std::to_string(j["gpus"].size());
    const unsigned want = j.contains("want") ? j["want"].value("gpus", 0u) : 0u;
    return want ? "(" + std::to_string(want) + ")" : "-";
}

std::string cpus_cell(const json& j) {
    if (j.contains("slurm_id"))
        return j.value("cpus_count", 0u) ? std::to_string(j["cpus_count"].get<unsigned>()) : "-";
    if (!j.value("cpus", json::array()).empty()) return std::to_string(j["cpus"].size());
    const unsigned want = j.contains("want") ? j["want"].value("cpus", 0u) : 0u;
    return want ? "(" + std::to_string(want) + ")" : "-";
}

std::string bytes_text(std::uint64_t b) {
    if (b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
    if (b >= (1ull << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(b) / (1ull << 30));
    return fmt::format("{} MiB", b >> 20);
}

}  // namespace

std::string jobs_table(const json& jobs) {
    std::vector<std::vector<std::string>> rows{{"ID", "OWNER", "STATE", "GPUS", "CPUS", "WAITED", "RAN", "NAME"}};
    for (const json& j : jobs) {
        const auto submit = opt_ms(j, "submit_ms"), start = opt_ms(j, "start_ms"), end = opt_ms(j, "end_ms");
        const std::string id = j["id"].is_string() ? j["id"].get<std::string>() : std::to_string(j.value("id", 0));
        rows.push_back({id, printable(j.value("owner", "")), j.value("state", ""), gpus_cell(j), cpus_cell(j),
                        span(submit, start ? start : end), span(start, end), printable(j.value("name", ""))});
    }
    std::vector<std::size_t> width(rows.front().size(), 0);
    for (const auto& r : rows)
        for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    std::string out;
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t i = 0; i < r.size(); ++i)
            line += i + 1 == r.size() ? r[i] : fmt::format("{:<{}}  ", r[i], width[i]);
        out += line + "\n";
    }
    return out;
}

std::string job_text(const json& j) {
    std::string out;
    auto line = [&](const std::string& key, const std::string& value) {
        out += fmt::format("{:<10} {}\n", key + ":", value);
    };
    line("job", std::to_string(j.value("id", 0)) + "  " + printable(j.value("name", "")));
    line("owner", printable(j.value("owner", "")) + " (uid " + std::to_string(j.value("owner_uid", 0)) + ")");
    std::string state = j.value("state", "");
    if (j.contains("exit_status")) state += ", exit status " + std::to_string(j["exit_status"].get<int>());
    line("state", state);
    if (j.contains("waiting")) line("waiting", j["waiting"].get<std::string>());
    if (j.contains("note")) line("note", printable(j["note"].get<std::string>()));
    std::string command;
    for (const auto& a : j.value("argv", json::array()))
        command += (command.empty() ? "" : " ") + shell_quoted(a.get<std::string>());
    line("command", command);
    line("cwd", printable(j.value("cwd", "")));
    if (j.contains("want")) {
        const json& w = j["want"];
        std::string want = fmt::format("{} GPU(s)", w.value("gpus", 0u));
        if (w.contains("gpu_uuids")) want += " (" + join(w["gpu_uuids"]) + ")";
        if (w.contains("gpu_memory_bytes"))
            want += ", " + bytes_text(w["gpu_memory_bytes"].get<std::uint64_t>()) + " each";
        if (w.value("share", false)) want += ", shared";
        want += fmt::format(", {} CPU(s)", w.value("cpus", 0u));
        if (w.value("memory_bytes", std::uint64_t{0}))
            want += ", " + bytes_text(w["memory_bytes"].get<std::uint64_t>()) + " memory";
        line("asks", want);
    }
    if (!j.value("gpus", json::array()).empty())
        line("gpus", join(j.value("gpu_indices", json::array())) + " (" + join(j["gpus"]) + ")");
    if (!j.value("cpus", json::array()).empty()) line("cpus", join(j["cpus"]));
    line("priority", std::to_string(j.value("priority", 0)));
    if (!j.value("after", json::array()).empty())
        line("after", join(j["after"]) + (j.value("after_ok", false) ? " (each must succeed)" : " (each must end)"));
    line("attempt", fmt::format("{} (retries allowed: {}, on out of memory: {})", j.value("attempt", 0),
                                j.value("retries", 0u), j.value("on_oom", "fail")));
    const auto submit = opt_ms(j, "submit_ms"), start = opt_ms(j, "start_ms"), end = opt_ms(j, "end_ms");
    line("waited", span(submit, start ? start : end));
    if (start) line("ran", span(start, end));
    if (j.contains("pid")) line("pid", std::to_string(j["pid"].get<std::uint32_t>()) + " (its supervisor)");
    if (j.contains("run_id"))
        line("run", std::to_string(j["run_id"].get<std::int64_t>()) + " (baton report " +
                        std::to_string(j["run_id"].get<std::int64_t>()) + ")");
    return out;
}

}  // namespace baton::queue
