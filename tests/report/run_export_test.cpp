// baton runs export on made-up samples and steps: the CSV's columns (a group per GPU seen in any
// sample, empty cells where a GPU or a figure is missing) and JSON Lines without unrecorded keys.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "report/run_export.hpp"

using namespace baton;
using namespace baton::report;

namespace {

std::vector<store::RunSample> two_samples() {
    store::RunSample a;
    a.t_ms = 1000;
    a.cpu_percent = 50;
    a.memory_used_bytes = 2.0 * 1073741824;
    a.disk_read_bytes_per_second.reset();  // not recorded (an old sample)
    store::RunSample::Gpu g0;
    g0.index = 0;
    g0.utilization_percent = 97.5;
    g0.throttle_reasons = 0b1000;  // hw_slowdown
    a.gpus = {g0};
    store::RunSample b = a;
    b.t_ms = 2000;
    b.disk_read_bytes_per_second = 12.5e6;
    store::RunSample::Gpu g3;
    g3.index = 3;
    g3.power_watts = 300;
    b.gpus = {g3};
    return {a, b};
}

}  // namespace

TEST(RunExport, CsvHasAColumnGroupPerGpuSeen) {
    const std::string csv = export_samples(two_samples(), "csv");
    std::istringstream in(csv);
    std::string header, first, second;
    std::getline(in, header);
    std::getline(in, first);
    std::getline(in, second);
    EXPECT_EQ(header.rfind("time,cpu_percent,iowait_percent,memory_used_bytes,", 0), 0u) << header;
    EXPECT_NE(header.find(",gpu0_utilization_percent,"), std::string::npos);
    EXPECT_NE(header.find(",gpu3_power_watts,"), std::string::npos);
    EXPECT_NE(header.find(",gpu0_throttle_reasons,gpu3_throttle_reasons"), std::string::npos);
    EXPECT_EQ(first.rfind("1970-01-01T00:00:01", 0), 0u) << first;
    EXPECT_NE(first.find(",50,"), std::string::npos);
    EXPECT_NE(first.find(",2147483648,"), std::string::npos);  // 2 GiB in bytes
    EXPECT_NE(first.find(",97.5,"), std::string::npos);
    EXPECT_NE(first.find(",hw_slowdown,"), std::string::npos) << first;
    EXPECT_NE(second.find(",12500000,"), std::string::npos);  // MB/s -> bytes per second
    const auto cells = [](const std::string& row) { return std::count(row.begin(), row.end(), ','); };
    EXPECT_EQ(cells(header), cells(first));
    EXPECT_EQ(cells(header), cells(second));
}

TEST(RunExport, JsonLinesLeaveOutWhatWasNotRecorded) {
    std::istringstream in(export_samples(two_samples(), "jsonl"));
    std::string line;
    std::getline(in, line);
    nlohmann::json a = nlohmann::json::parse(line);
    EXPECT_FALSE(a.contains("disk_read_bytes_per_second"));
    EXPECT_EQ(a["gpus"][0]["throttle_reasons"], nlohmann::json::array({"hw_slowdown"}));
    EXPECT_FALSE(a["gpus"][0].contains("power_watts"));
    std::getline(in, line);
    nlohmann::json b = nlohmann::json::parse(line);
    EXPECT_EQ(b["disk_read_bytes_per_second"], 12500000);
    EXPECT_EQ(b["gpus"][0]["index"], 3);
    EXPECT_FALSE(b["gpus"][0].contains("throttle_reasons"));  // not reported

    store::StepEvent s;
    s.t_ms = 5000;
    s.pid = 7;
    s.rank = 1;
    s.step = 12;
    s.step_ms = 250;
    s.wait_ms = 50;
    s.data = "{\"scale\":65536}";
    EXPECT_EQ(
        export_steps({s}, "csv"),
        "time,pid,rank,step,step_seconds,data_wait_seconds,samples\n1970-01-01T00:00:05.000Z,7,1,12,0.25,0.05,\n");
    nlohmann::json step = nlohmann::json::parse(export_steps({s}, "jsonl"));
    EXPECT_EQ(step["data"]["scale"], 65536);
    EXPECT_FALSE(step.contains("samples"));
}
