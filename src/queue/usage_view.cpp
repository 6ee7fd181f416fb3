#include "queue/usage_view.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)
#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "core/units.hpp"
#include "queue/job_text.hpp"
#include "store/usage_records.hpp"

namespace baton::queue {

namespace {

// Resource-time for people at every scale: "42s", "3m05s" under an hour, then hours ("96.4h"), the
// unit GPU budgets are counted in.
std::string usage_hours(double seconds) {
    if (seconds < 3600) return format_elapsed(static_cast<std::int64_t>(std::llround(seconds)));
    return fmt::format("{:.1f}h", seconds / 3600);
}

// A share as a whole percentage, "-" when there is nothing to divide by.
std::string usage_share(double part, double whole) {
    if (whole <= 0) return "-";
    return fmt::format("{:.0f}%", 100 * part / whole);
}

std::string usage_peak(std::uint64_t peak, std::optional<std::uint64_t> of) {
    if (!peak && !of) return "-";
    std::string out = format_gib(static_cast<double>(peak));
    if (of && *of) out += " of " + format_gib(static_cast<double>(*of), 0);
    return out;
}

}  // namespace

UsageView usage_view(std::vector<store::UsageRecord> jobs, std::int64_t since_ms) {
    UsageView v;
    v.since_ms = since_ms;
    std::sort(jobs.begin(), jobs.end(), [](const store::UsageRecord& a, const store::UsageRecord& b) {
        return std::tie(a.start_ms, a.label) < std::tie(b.start_ms, b.label);
    });
    std::map<std::string, UserUsage> by_user;
    for (const store::UsageRecord& j : jobs) {
        UserUsage& u = by_user[j.user];
        u.user = j.user;
        ++u.jobs;
        u.gpu_seconds += j.gpu_seconds;
        u.gpu_busy_seconds += j.gpu_busy_seconds;
        u.sm_seconds += j.sm_seconds;
        u.sm_busy_seconds += j.sm_busy_seconds;
        u.cpu_seconds += j.cpu_seconds;
        if (j.cpus) {
            u.cpu_seconds_allocated += j.cpu_seconds_allocated;
            u.cpu_seconds_of_allocated += j.cpu_seconds;
        }
    }
    for (auto& [name, u] : by_user) v.users.push_back(u);
    std::stable_sort(v.users.begin(), v.users.end(),
                     [](const UserUsage& a, const UserUsage& b) { return a.gpu_seconds > b.gpu_seconds; });
    v.jobs = std::move(jobs);
    return v;
}

std::string usage_text(const UsageView& v) {
    std::string out =
        "Usage since " + local_time_text(v.since_ms, "%Y-%m-%d %H:%M") + ", integrated from the agent's samples\n";
    if (v.jobs.empty()) return out + "no job was seen\n";
    std::vector<std::vector<std::string>> users{
        {"USER", "JOBS", "GPU TIME", "BUSY", "EFF", "SM", "CPU ALLOC", "CPU USED", "CPU EFF"}};
    for (const UserUsage& u : v.users)
        users.push_back({printable(u.user.empty() ? "?" : u.user), std::to_string(u.jobs), usage_hours(u.gpu_seconds),
                         usage_hours(u.gpu_busy_seconds), usage_share(u.gpu_busy_seconds, u.gpu_seconds),
                         usage_share(u.sm_busy_seconds, u.sm_seconds),
                         u.cpu_seconds_allocated > 0 ? usage_hours(u.cpu_seconds_allocated) : "-",
                         usage_hours(u.cpu_seconds), usage_share(u.cpu_seconds_of_allocated, u.cpu_seconds_allocated)});
    std::vector<std::vector<std::string>> jobs{{"JOB", "USER", "NAME", "GPUS", "SEEN", "GPU TIME", "BUSY", "EFF", "SM",
                                                "GPU MEM PEAK", "CPUS", "CPU EFF", "MEM PEAK"}};
    for (const store::UsageRecord& j : v.jobs) {
        std::string label = printable(j.label);
        if (!j.ended) label += " (running)";
        jobs.push_back({label, printable(j.user.empty() ? "?" : j.user), printable(j.name.empty() ? "-" : j.name),
                        std::to_string(j.gpus), format_elapsed(std::llround(j.seconds)), usage_hours(j.gpu_seconds),
                        usage_hours(j.gpu_busy_seconds), usage_share(j.gpu_busy_seconds, j.gpu_seconds),
                        usage_share(j.sm_busy_seconds, j.sm_seconds),
                        usage_peak(j.gpu_memory_peak_bytes, j.gpu_memory_total_bytes),
                        j.cpus ? std::to_string(*j.cpus) : "-",
                        j.cpus ? usage_share(j.cpu_seconds, j.cpu_seconds_allocated) : "-",
                        usage_peak(j.memory_peak_bytes, j.memory_allocated_bytes)});
    }
    return out + "\n" + columns_text(users) + "\n" + columns_text(jobs);
}

nlohmann::json usage_view_json(const UsageView& v) {
    auto share = [](double part, double whole) { return whole > 0 ? nlohmann::json(part / whole) : nlohmann::json(); };
    nlohmann::json users = nlohmann::json::array();
    for (const UserUsage& u : v.users)
        // Seconds, as the jobs' records (docs/queue.md#usage: one unit for every key).
        users.push_back({{"user", u.user},
                         {"jobs", u.jobs},
                         {"gpu_seconds", u.gpu_seconds},
                         {"gpu_busy_seconds", u.gpu_busy_seconds},
                         {"gpu_efficiency", share(u.gpu_busy_seconds, u.gpu_seconds)},
                         {"sm_seconds", u.sm_seconds},
                         {"sm_busy_seconds", u.sm_busy_seconds},
                         {"sm_activity", share(u.sm_busy_seconds, u.sm_seconds)},
                         {"cpu_seconds_allocated", u.cpu_seconds_allocated},
                         {"cpu_seconds", u.cpu_seconds},
                         {"cpu_efficiency", share(u.cpu_seconds_of_allocated, u.cpu_seconds_allocated)}});
    nlohmann::json jobs = nlohmann::json::array();
    for (const store::UsageRecord& j : v.jobs) {
        nlohmann::json o = store::usage_json(j);
        o["gpu_efficiency"] = share(j.gpu_busy_seconds, j.gpu_seconds);
        o["sm_activity"] = share(j.sm_busy_seconds, j.sm_seconds);
        o["cpu_efficiency"] = j.cpus ? share(j.cpu_seconds, j.cpu_seconds_allocated) : nlohmann::json();
        jobs.push_back(std::move(o));
    }
    return {{"since_ms", v.since_ms}, {"users", users}, {"jobs", jobs}};
}

}  // namespace baton::queue
