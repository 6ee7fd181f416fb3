// baton serve's machine history in the database: written, read back by range, replaced, pruned;
// and its size after a day of a busy 8-GPU box.
#include <gtest/gtest.h>

#include <filesystem>

#include "store/history.hpp"
#include "store/history_metrics.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::store;

TEST(HistoryMetrics, WritesReadsReplacesAndPrunes) {
    test::TempDir d;
    auto h = History::open(d.path() + "/h.db");
    ASSERT_TRUE(h.ok()) << h.error().message;
    std::vector<MetricMinute> rows;
    for (std::int64_t m = 100; m < 110; ++m) {
        rows.push_back({"gpu.utilization_percent", "gpu:0", m, double(m), double(m) - 1, double(m) + 1});
        rows.push_back({"cpu.utilization_percent", "host", m, 5, 1, 9});
    }
    ASSERT_TRUE(h->minute_table().add_metric_minutes(rows).ok());
    auto got = h->minute_table().metric_minutes("gpu.utilization_percent", "gpu:0", 103, 105);
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(got->size(), 3u);
    EXPECT_EQ((*got)[0].minute, 103);
    EXPECT_DOUBLE_EQ((*got)[2].max, 106);
    // The same minute again replaces it (an agent restarted within a minute).
    ASSERT_TRUE(h->minute_table().add_metric_minutes({{"gpu.utilization_percent", "gpu:0", 104, 1, 1, 1}}).ok());
    got = h->minute_table().metric_minutes("gpu.utilization_percent", "gpu:0", 104, 104);
    ASSERT_EQ(got->size(), 1u);
    EXPECT_DOUBLE_EQ((*got)[0].avg, 1);
    auto series = h->minute_table().metric_series();
    ASSERT_TRUE(series.ok());
    EXPECT_EQ(series->size(), 2u);
    auto pruned = h->minute_table().prune_metric_minutes(105);
    ASSERT_TRUE(pruned.ok());
    EXPECT_EQ(*pruned, 10);  // minutes 100-104 of both series
    EXPECT_EQ(h->minute_table().metric_minutes("cpu.utilization_percent", "host", 0, 1000)->size(), 5u);
    EXPECT_EQ(h->integrity(), "ok");
}

// A day at 1 s of a box with 8 GPUs, 2 disks and 3 interfaces, as baton serve writes it (one row per
// series and minute): well under the 50 MB the issue allows.
TEST(HistoryMetrics, ADayOfAnEightGpuBoxStaysSmall) {
    test::TempDir d;
    const std::string path = d.path() + "/day.db";
    auto h = History::open(path);
    ASSERT_TRUE(h.ok());
    std::vector<std::pair<std::string, std::string>> series;
    for (const char* m :
         {"cpu.utilization_percent", "cpu.iowait_percent", "memory.used_bytes", "memory.total_bytes",
          "memory.shm_used_bytes", "swap.used_bytes", "swap.in_bytes_per_second", "swap.out_bytes_per_second"})
        series.emplace_back(m, "host");
    for (const char* disk : {"disk:nvme0n1", "disk:nvme1n1"})
        for (const char* m : {"disk.read_bytes_per_second", "disk.write_bytes_per_second", "disk.busy_percent"})
            series.emplace_back(m, disk);
    for (const char* net : {"net:lo", "net:eth0", "net:ib0"})
        for (const char* m : {"network.rx_bytes_per_second", "network.tx_bytes_per_second"})
            series.emplace_back(m, net);
    for (int g = 0; g < 8; ++g)
        for (const char* m :
             {"gpu.utilization_percent", "gpu.sm_activity_percent", "gpu.tensor_activity_percent",
              "gpu.memory_used_bytes", "gpu.memory_used_percent", "gpu.power_watts", "gpu.temperature_celsius"})
            series.emplace_back(m, "gpu:" + std::to_string(g));
    const std::int64_t start = 29'000'000;
    for (std::int64_t m = start; m < start + 1440; ++m) {  // one write a minute, as the agent does
        std::vector<MetricMinute> rows;
        for (const auto& [metric, subject] : series)
            rows.push_back({metric, subject, m, 1234567.0 + double(m % 97), 1.0 * double(m % 13), 9e9});
        ASSERT_TRUE(h->minute_table().add_metric_minutes(rows).ok());
    }
    EXPECT_EQ(h->minute_table().metric_minutes("gpu.power_watts", "gpu:7", 0, start + 5000)->size(), 1440u);
    const auto bytes = std::filesystem::file_size(path) +
                       (std::filesystem::exists(path + "-wal") ? std::filesystem::file_size(path + "-wal") : 0);
    std::printf("a day of %zu series: %.1f MB\n", series.size(), static_cast<double>(bytes) / 1e6);
    EXPECT_LT(bytes, 50u * 1000 * 1000);
}
