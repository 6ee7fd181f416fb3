#include "queue/job_text.hpp"

#include <algorithm>
#include <climits>
#include <type_traits>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "core/text_parse.hpp"
#include "core/units.hpp"

namespace baton::queue {

using nlohmann::json;

Result<std::int64_t> parse_job_id(const std::string& word) {
    const std::optional<std::int64_t> id = text::parse_digits<std::int64_t>(word);
    if (!id || *id == 0)
        return make_error(ErrorCode::invalid_argument, "'" + word + "' is not a job id (baton queue lists them)");
    return *id;
}

namespace {

// A word as a shell would need it typed: 'two words' quoted, plain words as they are.
std::string shell_quoted(const std::string& word) {
    const std::string w = printable(word);
    if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:=+@%") ==
                          std::string::npos)
        return w;
    return sh_quoted(w);
}

// "1h02m", "3m05s", "42s", "-".
std::string span(std::optional<std::int64_t> from_ms, std::optional<std::int64_t> to_ms) {
    if (!from_ms) return "-";
    return format_elapsed((to_ms.value_or(unix_millis()) - *from_ms) / 1000);
}

template <typename T>
std::string join(const std::vector<T>& items) {
    std::string out;
    for (const T& v : items) {
        out += out.empty() ? "" : ",";
        if constexpr (std::is_same_v<T, std::string>)
            out += v;
        else
            out += std::to_string(v);
    }
    return out;
}

std::string bytes_text(std::uint64_t b) {
    if (b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
    if (b >= (1ull << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(b) / (1ull << 30));
    return fmt::format("{} MiB", b >> 20);
}

// The GPUs column: the indices it holds, or how many it waits for.
std::string gpus_cell(const JobView& j) {
    if (!j.gpu_indices.empty()) return join(j.gpu_indices);
    if (!j.gpus.empty()) return std::to_string(j.gpus.size());
    const unsigned want = j.ask ? gpus_asked(j.ask->want) : 0u;
    return want ? "(" + std::to_string(want) + ")" : "-";
}

std::string cpus_cell(const JobView& j) {
    if (!j.cpus.empty()) return std::to_string(j.cpus.size());
    const unsigned want = j.ask ? j.ask->want.cpus : 0u;
    return want ? "(" + std::to_string(want) + ")" : "-";
}

std::optional<std::int64_t> opt_ms(const json& j, const char* key) {
    if (j.contains(key) && j[key].is_number_integer()) return j[key].get<std::int64_t>();
    return std::nullopt;
}

}  // namespace

JobRow job_row(const JobView& j) {
    return {std::to_string(j.id), j.owner, j.paused_ms ? "paused" : store::state_name(j.state), gpus_cell(j),
            cpus_cell(j), j.submit_ms, j.start_ms, j.end_ms,
            // An array's element: its index first (a long name is cut at its end).
            j.array_index ? "[" + std::to_string(*j.array_index) + "] " + j.name : j.name};
}

JobRow slurm_row(const json& j) {
    const auto count = [&](const char* key) {
        const std::int64_t n = j.contains(key) && j[key].is_number_integer() ? j[key].get<std::int64_t>() : 0;
        return n > 0 ? std::to_string(n) : std::string("-");
    };
    return {j.value("id", std::string()),
            j.value("owner", std::string()),
            j.value("state", std::string()),
            count("gpus_count"),
            count("cpus_count"),
            opt_ms(j, "submit_ms"),
            opt_ms(j, "start_ms"),
            opt_ms(j, "end_ms"),
            j.value("name", std::string())};
}

std::string jobs_table(const std::vector<JobRow>& jobs) {
    std::vector<std::vector<std::string>> rows{{"ID", "OWNER", "STATE", "GPUS", "CPUS", "WAITED", "RAN", "NAME"}};
    for (const JobRow& j : jobs)
        rows.push_back({j.id, printable(j.owner), printable(j.state), j.gpus, j.cpus,
                        span(j.submit_ms, j.start_ms ? j.start_ms : j.end_ms), span(j.start_ms, j.end_ms),
                        printable(j.name)});
    return columns_text(rows);
}

std::string no_open_jobs_text(std::size_t ended) {
    if (ended == 0) return "no job: the queue is empty (baton submit -- CMD queues one)\n";
    return fmt::format("no job queued or running; {} ended (baton queue --all lists them)\n", ended);
}

std::string columns_text(const std::vector<std::vector<std::string>>& rows) {
    if (rows.empty()) return "";
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

std::string job_text(const JobView& j) {
    std::string out;
    auto line = [&](const std::string& key, const std::string& value) {
        out += fmt::format("{:<10} {}\n", key + ":", value);
    };
    line("job", std::to_string(j.id) + "  " + printable(j.name));
    line("owner", printable(j.owner) + " (uid " + std::to_string(j.owner_uid) + ")");
    std::string state = store::state_name(j.state);
    if (j.exit_status) state += ", exit status " + std::to_string(*j.exit_status);
    if (j.paused_ms)
        state += ", paused for " + span(j.paused_ms, std::nullopt) + " (baton resume " + std::to_string(j.id) + ")";
    line("state", state);
    if (!j.waiting.empty()) line("waiting", j.waiting);
    if (!j.note.empty()) line("note", printable(j.note));
    std::string command;
    for (const std::string& a : j.argv) command += (command.empty() ? "" : " ") + shell_quoted(a);
    line("command", command);
    line("cwd", printable(j.cwd));
    if (j.ask) {
        const Resources& w = j.ask->want;
        std::string want = fmt::format("{} GPU(s)", gpus_asked(w));
        if (!w.gpu_uuids.empty()) want += " (" + join(w.gpu_uuids) + ")";
        if (w.gpu_memory_bytes) want += ", " + bytes_text(*w.gpu_memory_bytes) + " each";
        if (w.share) want += ", shared";
        want += fmt::format(", {} CPU(s)", w.cpus);
        if (w.memory_bytes) want += ", " + bytes_text(w.memory_bytes) + " memory";
        line("asks", want);
    }
    if (!j.gpus.empty()) line("gpus", join(j.gpu_indices) + " (" + join(j.gpus) + ")");
    if (!j.cpus.empty()) line("cpus", join(j.cpus));
    line("priority", std::to_string(j.priority));
    if (j.array_id && j.array_index) {
        std::string array = fmt::format("{}, index {}", *j.array_id, *j.array_index);
        if (j.ask && j.ask->max_parallel) array += fmt::format(" (at most {} of it at once)", j.ask->max_parallel);
        line("array", array);
    }
    if (j.ask && !j.ask->group.empty()) line("group", printable(j.ask->group));
    if (!j.after.empty()) line("after", join(j.after) + (j.after_ok ? " (each must succeed)" : " (each must end)"));
    line("attempt",
         fmt::format("{} (retries allowed: {}, on out of memory: {})", j.attempt, j.ask ? j.ask->retries : 0u,
                     j.ask && j.ask->on_oom == OnOom::retry ? "retry" : "fail"));
    line("waited", span(j.submit_ms, j.start_ms ? j.start_ms : j.end_ms));
    if (j.start_ms) line("ran", span(j.start_ms, j.end_ms));
    if (j.pid) line("pid", std::to_string(*j.pid) + " (its supervisor)");
    if (j.run_id) line("run", std::to_string(*j.run_id) + " (baton report " + std::to_string(*j.run_id) + ")");
    return out;
}

}  // namespace baton::queue
