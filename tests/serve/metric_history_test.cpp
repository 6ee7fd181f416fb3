// The agent's memory of the last minutes: points kept and dropped by age, minutes summarised with
// average, minimum and maximum, per-core series kept in memory only.
#include <gtest/gtest.h>

#include <algorithm>

#include "serve/metric_history.hpp"
#include "serve/node_metrics.hpp"

using namespace baton;
using namespace baton::serve;
using store::MetricMinute;

namespace {

Snapshot snap_at(std::int64_t t_ms, double cpu, double gpu_util) {
    Snapshot s;
    s.time_unix_ms = t_ms;
    s.cpu.total.utilization_percent = cpu;
    CpuCore c;
    c.id = 3;
    c.times.utilization_percent = cpu;
    s.cpu.cores.push_back(c);
    s.memory.used_bytes = 1000;
    s.memory.total_bytes = 4000;
    GpuInfo g;
    g.index = 1;
    g.utilization_percent = gpu_util;
    g.memory_used_bytes = 30;
    g.memory_total_bytes = 120;
    s.gpus.push_back(g);
    return s;
}

}  // namespace

TEST(MetricHistory, KeepsTheWindowAndAnswersRanges) {
    MetricHistory h(10);  // 10 s
    const std::int64_t t0 = 1'800'000'000'000;
    for (int i = 0; i < 30; ++i) h.add(snap_at(t0 + i * 1000, i, 50));
    auto all = h.range("cpu.utilization_percent", "host", 0, t0 + 100000);
    ASSERT_EQ(all.size(), 11u);  // t0+19 s .. t0+29 s
    EXPECT_EQ(all.front().t_ms, t0 + 19000);
    EXPECT_EQ(all.back().value, 29);
    auto some = h.range("gpu.memory_used_percent", "gpu:1", t0 + 25000, t0 + 26000);
    ASSERT_EQ(some.size(), 2u);
    EXPECT_FLOAT_EQ(some[0].value, 25);
    EXPECT_TRUE(h.range("gpu.utilization_percent", "gpu:7", 0, t0 + 100000).empty());
    EXPECT_EQ(h.range("cpu.core_utilization_percent", "cpu:3", 0, t0 + 100000).size(), 11u);
}

TEST(MetricHistory, SeriesThatStopLeaveGapsAndThenGo) {
    MetricHistory h(5, 1);  // a ring of 6 samples
    const std::int64_t t0 = 1'800'000'000'000;
    for (int i = 0; i < 3; ++i) h.add(snap_at(t0 + i * 1000, i, 50));
    Snapshot no_gpu = snap_at(t0 + 3000, 3, 0);
    no_gpu.gpus.clear();
    h.add(no_gpu);
    h.add(snap_at(t0 + 4000, 4, 60));
    auto gpu = h.range("gpu.utilization_percent", "gpu:1", 0, t0 + 100000);
    ASSERT_EQ(gpu.size(), 4u) << "no point at t0+3 s";
    EXPECT_EQ(gpu[2].t_ms, t0 + 2000);
    EXPECT_EQ(gpu[3].t_ms, t0 + 4000);
    EXPECT_FLOAT_EQ(gpu[3].value, 60);
    // Without the GPU for a whole ring, its series go (once their minutes are taken).
    const auto gpu_series = std::make_pair(std::string("gpu.utilization_percent"), std::string("gpu:1"));
    h.take_finished_minutes(t0 + 600000);
    for (int i = 5; i < 12; ++i) {
        no_gpu.time_unix_ms = t0 + i * 1000;
        h.add(no_gpu);
    }
    auto names = h.series();
    EXPECT_EQ(std::find(names.begin(), names.end(), gpu_series), names.end());
    EXPECT_TRUE(h.range("gpu.utilization_percent", "gpu:1", 0, t0 + 100000).empty());
    h.add(snap_at(t0 + 12000, 12, 70));
    names = h.series();
    EXPECT_NE(std::find(names.begin(), names.end(), gpu_series), names.end()) << "back with the GPU";
    EXPECT_EQ(h.range("gpu.utilization_percent", "gpu:1", 0, t0 + 100000).size(), 1u);
}

TEST(MetricHistory, LateSamplesDoNotReachFurtherBackThanKeepSeconds) {
    MetricHistory h(10, 1);
    const std::int64_t t0 = 1'800'000'000'000;
    for (int i = 0; i < 8; ++i) h.add(snap_at(t0 + i * 3000, i, 50));  // every 3 s instead of 1
    auto all = h.range("cpu.utilization_percent", "host", 0, t0 + 100000);
    ASSERT_EQ(all.size(), 4u);  // t0+12 s .. t0+21 s: 10 s back from the newest
    EXPECT_EQ(all.front().t_ms, t0 + 12000);
}

TEST(MetricHistory, SummarisesEachMinuteOnce) {
    MetricHistory h(900);
    const std::int64_t m0 = 30'000'000;  // a minute number
    for (int s = 0; s < 60; ++s) h.add(snap_at(m0 * 60000 + s * 1000, s, s % 2 ? 100 : 0));
    EXPECT_TRUE(h.take_finished_minutes(m0 * 60000 + 59500).empty());  // the minute is not over
    h.add(snap_at((m0 + 1) * 60000, 7, 7));
    std::vector<store::MetricMinute> rows = h.take_finished_minutes((m0 + 1) * 60000 + 10);
    auto find = [&](const std::string& metric, const std::string& subject) -> const MetricMinute* {
        for (const MetricMinute& m : rows)
            if (m.metric == metric && m.subject == subject) return &m;
        return nullptr;
    };
    const store::MetricMinute* cpu = find("cpu.utilization_percent", "host");
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(cpu->minute, m0);
    EXPECT_DOUBLE_EQ(cpu->avg, 29.5);
    EXPECT_DOUBLE_EQ(cpu->min, 0);
    EXPECT_DOUBLE_EQ(cpu->max, 59);
    const store::MetricMinute* gpu = find("gpu.utilization_percent", "gpu:1");
    ASSERT_NE(gpu, nullptr);
    EXPECT_DOUBLE_EQ(gpu->avg, 50);
    EXPECT_EQ(find("cpu.core_utilization_percent", "cpu:3"), nullptr);    // memory only
    EXPECT_TRUE(h.take_finished_minutes((m0 + 1) * 60000 + 20).empty());  // taken once
    // The minute under way, when the agent stops.
    rows = h.take_finished_minutes((m0 + 2) * 60000 + 60000);
    cpu = find("cpu.utilization_percent", "host");
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(cpu->minute, m0 + 1);
    EXPECT_DOUBLE_EQ(cpu->avg, 7);
}

TEST(NodeMetrics, EveryEmittedMetricIsKnownAndStaleGpusHaveNone) {
    Snapshot s = snap_at(1000, 10, 20);
    s.gpus.push_back(s.gpus[0]);
    s.gpus[1].index = 2;
    s.gpus[1].stale = true;
    int gpu2 = 0;
    for_each_metric(s, true, [&](std::string_view metric, const std::string& subject, double) {
        EXPECT_TRUE(known_metric(metric)) << metric;
        gpu2 += subject == "gpu:2";
    });
    EXPECT_EQ(gpu2, 0);
    EXPECT_FALSE(known_metric("gpu.nonsense"));
}
