// What `baton usage` prints: users ordered by GPU-hours, shares only where there is something to
// divide by, a job's stretches merged into one, and the JSON beside the table.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "queue/usage_view.hpp"
#include "store/usage_records.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

store::UsageRecord usage_job(const std::string& label, const std::string& user, std::int64_t start, double gpu_seconds,
                             double busy) {
    store::UsageRecord r;
    r.label = label;
    r.kind = label.substr(0, label.find(':'));
    r.job = label.substr(label.find(':') + 1);
    r.user = user;
    r.start_ms = start;
    r.end_ms = start + 1000;
    r.ended = true;
    r.seconds = gpu_seconds;
    r.gpus = 1;
    r.gpu_seconds = gpu_seconds;
    r.gpu_busy_seconds = busy;
    return r;
}

// The cells of the table's first line that starts with `first` (cells are two or more spaces apart).
std::vector<std::string> usage_cells(const std::string& text, const std::string& first) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(first + " ", 0) != 0) continue;
        std::vector<std::string> cells;
        std::size_t at = 0;
        while (at < line.size()) {
            std::size_t gap = line.find("  ", at);
            if (gap == std::string::npos) gap = line.size();
            cells.push_back(line.substr(at, gap - at));
            at = line.find_first_not_of(' ', gap);
            if (at == std::string::npos) break;
        }
        return cells;
    }
    return {};
}

}  // namespace

TEST(UsageView, UsersByGpuHoursWithTheirSharesAndJobsByStart) {
    store::UsageRecord a = usage_job("queue:1", "ada", 2000, 3600, 2700);
    a.cpus = 4;
    a.cpu_seconds_allocated = 4 * 3600;
    a.cpu_seconds = 3600;
    a.sm_seconds = 3600;
    a.sm_busy_seconds = 1800;
    store::UsageRecord b = usage_job("user:bob", "bob", 1000, 7200, 0);  // held a GPU, never computed
    const UsageView v = usage_view({a, b}, 0);
    ASSERT_EQ(v.users.size(), 2u);
    EXPECT_EQ(v.users[0].user, "bob");       // more GPU-hours first
    EXPECT_EQ(v.jobs[0].label, "user:bob");  // by start
    const std::string text = usage_text(v);
    EXPECT_EQ(usage_cells(text, "ada"),
              (std::vector<std::string>{"ada", "1", "1.0h", "45m00s", "75%", "50%", "4.0h", "1.0h", "25%"}))
        << text;
    EXPECT_EQ(usage_cells(text, "bob"), (std::vector<std::string>{"bob", "1", "2.0h", "0s", "0%", "-", "-", "0s", "-"}))
        << text;
    EXPECT_EQ(usage_cells(text, "queue:1").at(5), "1.0h") << text;
    const nlohmann::json j = usage_view_json(v);
    EXPECT_DOUBLE_EQ(j["users"][1]["gpu_efficiency"].get<double>(), 0.75);
    EXPECT_DOUBLE_EQ(j["users"][1]["cpu_efficiency"].get<double>(), 0.25);
    EXPECT_TRUE(j["users"][0]["sm_activity"].is_null());
    EXPECT_TRUE(j["jobs"][0]["cpu_efficiency"].is_null());
    EXPECT_EQ(usage_text(usage_view({}, 0)).find("no job was seen") != std::string::npos, true);
}

TEST(UsageView, AJobsStretchesAreOneJobAndAnotherUsersAreLeftOut) {
    store::UsageRecord first = usage_job("queue:3", "ada", 1000, 3600, 1800);
    first.ended = false;
    first.memory_peak_bytes = 5;
    store::UsageRecord second = usage_job("queue:3", "ada", 3601000, 600, 600);
    second.memory_peak_bytes = 3;
    store::UsageRecord other = usage_job("queue:4", "bob", 500, 10, 10);
    const std::vector<store::UsageRecord> jobs = store::usage_by_job({second, other, first}, "ada");
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_EQ(jobs[0].start_ms, 1000);
    EXPECT_EQ(jobs[0].end_ms, 3602000);
    EXPECT_TRUE(jobs[0].ended);  // as its last stretch says
    EXPECT_DOUBLE_EQ(jobs[0].gpu_seconds, 4200);
    EXPECT_DOUBLE_EQ(jobs[0].gpu_busy_seconds, 2400);
    EXPECT_EQ(jobs[0].memory_peak_bytes, 5u);
    EXPECT_EQ(store::usage_by_job({second, other, first}).size(), 2u);
}
