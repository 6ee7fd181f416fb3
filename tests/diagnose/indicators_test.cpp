// The indicator table: levels at the seed's boundaries, and which alarms hold over a window.
#include <gtest/gtest.h>

#include "diagnose/indicators.hpp"

using namespace baton;
using namespace baton::diagnose;

namespace {

Snapshot at(double seconds, double cpu, double iowait = 0, double swap = 0) {
    Snapshot s;
    s.time_unix_ms = static_cast<std::int64_t>(seconds * 1000);
    s.cpu.total.utilization_percent = cpu;
    s.cpu.total.iowait_percent = iowait;
    s.swap.in_bytes_per_second = swap / 2;
    s.swap.out_bytes_per_second = swap / 2;
    return s;
}

GpuInfo memory_gpu(unsigned index, std::uint64_t used_gib, std::uint64_t total_gib) {
    GpuInfo g;
    g.index = index;
    g.memory_used_bytes = used_gib << 30;
    g.memory_total_bytes = total_gib << 30;
    return g;
}

}  // namespace

TEST(Indicators, LevelsAtTheSeedBoundaries) {
    Thresholds t;
    EXPECT_EQ(gpu_memory_level(t, 59.9), Level::low);
    EXPECT_EQ(gpu_memory_level(t, 60), Level::best);
    EXPECT_EQ(gpu_memory_level(t, 85), Level::best);
    EXPECT_EQ(gpu_memory_level(t, 85.1), Level::elevated);
    EXPECT_EQ(gpu_memory_level(t, 90), Level::elevated);
    EXPECT_EQ(gpu_memory_level(t, 90.1), Level::alarm);
    EXPECT_EQ(cpu_level(t, 70), Level::best);
    EXPECT_EQ(cpu_level(t, 75), Level::elevated);
    EXPECT_EQ(cpu_level(t, 80.5), Level::alarm);
    EXPECT_EQ(swap_level(t, 0), Level::best);
    EXPECT_EQ(swap_level(t, 500e3), Level::elevated);
    EXPECT_EQ(swap_level(t, 1.5e6), Level::alarm);
    EXPECT_EQ(iowait_level(t, 2), Level::best);
    EXPECT_EQ(iowait_level(t, 3), Level::elevated);
    EXPECT_EQ(iowait_level(t, 5.5), Level::alarm);
    t.gpu_memory_alarm_percent = 95;  // configurable: the same value is now only elevated
    EXPECT_EQ(gpu_memory_level(t, 93), Level::elevated);
    EXPECT_STREQ(level_name(Level::alarm), "alarm");
}

TEST(Indicators, GpuMemoryAlarmIsImmediate) {
    IndicatorWindow w{Thresholds{}};
    Snapshot s = at(100, 10);
    s.gpus = {memory_gpu(0, 75, 80), memory_gpu(1, 40, 80)};
    w.add(s);
    auto b = w.breaches();
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].rule, "gpu_memory_high");
    EXPECT_EQ(b[0].subject, "gpu:0");
    EXPECT_EQ(b[0].text, "GPU0 memory 94 % (> 90 %)");
    s.gpus[0].stale = true;  // an old reading is not a current alarm
    w.add(s);
    EXPECT_TRUE(w.breaches().empty());
}

TEST(Indicators, CpuAlarmNeedsToBeSustained) {
    IndicatorWindow w{Thresholds{}};
    for (int i = 0; i <= 20; ++i) w.add(at(i, 95));
    EXPECT_TRUE(w.breaches().empty()) << "20 s of a 30 s window is not yet sustained (needs 24 s)";
    for (int i = 21; i <= 30; ++i) w.add(at(i, 95));
    auto b = w.breaches();
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].rule, "cpu_load_high");
    EXPECT_EQ(b[0].text, "CPU 95 % over 30 s (> 80 % sustained)");
    // Seven quiet seconds of thirty-one: 77 % of the samples breach, under the 80 % share.
    for (int i = 31; i <= 37; ++i) w.add(at(i, 10));
    EXPECT_TRUE(w.breaches().empty());
}

TEST(Indicators, SwapAndIoWait) {
    IndicatorWindow w{Thresholds{}};
    for (int i = 0; i <= 30; ++i) w.add(at(i, 10, i < 29 ? 1 : 90, 2e6));
    auto b = w.breaches();
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0].rule, "swap_active");
    EXPECT_EQ(b[0].text, "swap 2.0 MB/s over 30 s (> 1.0 MB/s sustained)");
    EXPECT_EQ(b[1].rule, "io_wait_high");  // the window's average: (29 x 1 + 2 x 90) / 31
    EXPECT_EQ(b[1].text, "I/O wait 6.7 % (> 5 % of CPU time)");
}

TEST(Indicators, WindowForgetsOldSamplesAndClockSteps) {
    IndicatorWindow w{Thresholds{}};
    for (int i = 0; i <= 30; ++i) w.add(at(i, 95));
    ASSERT_EQ(w.breaches().size(), 1u);
    w.add(at(5, 95));  // the clock stepped back: the old window is gone
    EXPECT_TRUE(w.breaches().empty());
    w.add(at(1000, 95));
    EXPECT_TRUE(w.breaches().empty());
}
