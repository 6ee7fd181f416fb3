// The job's energy over a run: GPU counters from their first reading (a driver reload's reset kept
// out), the CPU packages', the joules between two moments interpolated, per step over the covered span,
// and a long job's series kept small.
#include "run/energy.hpp"

#include <gtest/gtest.h>

#include "store/run_energy.hpp"

using baton::run::EnergyMeter;

TEST(Energy, CountersFromTheirFirstReadingAndInterpolated) {
    EnergyMeter m;
    EXPECT_FALSE(m.gpu_joules());
    EXPECT_FALSE(m.joules_between(0, 10));
    m.add(1000, {{0, 5000.0}}, 100.0);
    m.add(2000, {{0, 5300.0}}, 150.0);             // 300 J of GPU and 50 J of CPU in this second
    m.add(3000, {{0, 5600.0}, {1, 70.0}}, 200.0);  // GPU 1 joins: counted from its first reading
    m.add(4000, {{0, 5900.0}, {1, 170.0}}, 250.0);
    EXPECT_DOUBLE_EQ(*m.gpu_joules(), 900 + 100);
    EXPECT_DOUBLE_EQ(*m.cpu_joules(), 150);
    EXPECT_DOUBLE_EQ(*m.joules_between(1000, 2000), 350);
    EXPECT_DOUBLE_EQ(*m.joules_between(1500, 2500), 175 + 175);
    EXPECT_DOUBLE_EQ(*m.joules_between(3000, 4000), 450);
}

TEST(Energy, ACounterThatWentBackStartsAgainFromThere) {
    EnergyMeter m;
    m.add(0, {{0, 1000.0}}, std::nullopt);
    m.add(1000, {{0, 1500.0}}, std::nullopt);
    m.add(2000, {{0, 20.0}}, std::nullopt);  // the driver reloaded: its counter restarted
    m.add(3000, {{0, 120.0}}, std::nullopt);
    EXPECT_DOUBLE_EQ(*m.gpu_joules(), 500 + 100);
    EXPECT_FALSE(m.cpu_joules());
}

TEST(Energy, PerStepOverTheSpanTheReadingsCover) {
    EnergyMeter m;
    for (int i = 0; i <= 10; ++i) m.add(i * 1000, {{0, 100.0 * i}}, std::nullopt);  // 100 W
    // 50 steps between 2 s and 7 s: 500 J.
    auto e = m.figures(2000, 7000, 50, 200.0);
    ASSERT_TRUE(e.joules_per_step);
    EXPECT_DOUBLE_EQ(*e.joules_per_step, 10);
    EXPECT_DOUBLE_EQ(*e.joules_per_sample, 2.5);
    // The last steps came after the last reading (8 s to 12 s, 2 s of 4 covered): the covered half's share.
    e = m.figures(8000, 12000, 40, std::nullopt);
    ASSERT_TRUE(e.joules_per_step);
    EXPECT_DOUBLE_EQ(*e.joules_per_step, 200.0 / 20);
    EXPECT_FALSE(e.joules_per_sample);
    // Less than half covered, or no steps: nothing per step, the totals still.
    e = m.figures(9000, 14000, 40, std::nullopt);
    EXPECT_FALSE(e.joules_per_step);
    EXPECT_DOUBLE_EQ(*e.gpu_joules, 1000);
    EXPECT_FALSE(m.figures(0, 0, 0, std::nullopt).joules_per_step);
}

TEST(Energy, ALongJobKeepsFewPointsAndTheSameTotals) {
    EnergyMeter m;
    const int n = 3 * static_cast<int>(EnergyMeter::kMaxPoints);
    for (int i = 0; i < n; ++i) m.add(i * 500LL, {{0, 50.0 * i}}, std::nullopt);  // 100 W, a sample each 0.5 s
    EXPECT_DOUBLE_EQ(*m.gpu_joules(), 50.0 * (n - 1));
    EXPECT_NEAR(*m.joules_between(1000, 501000), 50000, 1e-6);  // linear: halving loses nothing
}

TEST(Energy, JsonRoundTripsAndTextSaysWhatIsThere) {
    baton::store::RunEnergy e;
    EXPECT_EQ(baton::store::to_json(e), "");
    e.gpu_joules = 14700;
    e.joules_per_step = 40;
    const std::string text = baton::store::to_json(e);
    auto back = baton::store::run_energy_from_json(text);
    EXPECT_EQ(back.gpu_joules, e.gpu_joules);
    EXPECT_EQ(back.joules_per_step, e.joules_per_step);
    EXPECT_FALSE(back.cpu_joules);
    EXPECT_EQ(baton::store::energy_text(back), "GPUs 14.7 kJ; 40 J per step");
    EXPECT_TRUE(baton::store::run_energy_from_json("{\"gpu_joules\":-5}").empty());
    EXPECT_TRUE(baton::store::run_energy_from_json("not json").empty());
    EXPECT_EQ(baton::store::joules_text(0.52), "0.52 J");
    EXPECT_EQ(baton::store::joules_text(3.4e6), "3.4 MJ");
}
