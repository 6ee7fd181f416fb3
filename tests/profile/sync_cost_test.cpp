// What a sync costs the GPU: from the drain, at most the GPU time it blocked the host for, each idle
// instant once. On partitions built by hand (charge_syncs), and on traces (analyse): eight syncs in one
// gap, a sync on an idle GPU, a host that restarts kernel by kernel after a drain (the sync's, not
// launch_bound's), and a real A100 trace.
#include "profile/sync_cost.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "profile/profile_rules.hpp"
#include "profile/step_breakdown.hpp"
#include "profile/trace_builder.hpp"
#include "test_support.hpp"

using namespace baton::profile;
using baton::test::TraceBuilder;

namespace {

// GPU labels as the analysis uses them: 0 busy; 11, 12, 13 idle (host wait, launch gap, other).
constexpr int kBusy = 0, kHostWait = 11, kLaunchGap = 12, kOther = 13, kData = 1, kHostBusy = 5;
const SyncLabels kLabels{kHostWait, kLaunchGap, kOther, kData};

double total(const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0);
}

const std::vector<std::pair<double, double>> kOneStep = {{0, 1000}};

}  // namespace

TEST(SyncCost, EightCallsInOneGapChargeItOnce) {
    // The GPU runs to 100, idles to 600. Eight calls: the first blocks from 50 (50 us of GPU time) and
    // returns at 100; the seven after it wait on an idle GPU.
    const std::vector<Piece> gpu = {{0, 100, kBusy}, {100, 600, kHostWait}, {600, 1000, kBusy}};
    std::vector<SyncCall> calls = {{50, 100}};
    for (int i = 0; i < 7; ++i) calls.push_back({110.0 + 10 * i, 115.0 + 10 * i});
    const SyncCharges c = charge_syncs(calls, {gpu}, {{0, 1000, kHostBusy}}, kOneStep, kLabels);
    EXPECT_DOUBLE_EQ(c.per_call_us[0], 50) << "at most the 50 us it blocked the host while the GPU ran";
    for (std::size_t k = 1; k < calls.size(); ++k) EXPECT_DOUBLE_EQ(c.per_call_us[k], 0) << "waited for nothing";
    EXPECT_LE(total(c.per_call_us), 500);
}

TEST(SyncCost, ASyncOnAnIdleGpuCostsNothing) {
    // The GPU has idled since 100; a 25 us sync at 1000 and nothing until 3,000,000.
    const std::vector<Piece> gpu = {{0, 100, kBusy}, {100, 3'000'000, kHostWait}, {3'000'000, 3'000'100, kBusy}};
    const SyncCharges c = charge_syncs({{1000, 1025}}, {gpu}, {{0, 3'000'100, kHostBusy}}, {{0, 3'000'100}}, kLabels);
    EXPECT_DOUBLE_EQ(c.per_call_us[0], 0);
    EXPECT_TRUE(c.by_device[0].empty());
}

TEST(SyncCost, TheHostsRestartAfterADrainIsTheSyncsUpToWhatItBlocked) {
    // Drained at 300 after blocking 200 us (100 to 300); then kernels of 10 us with 30 us gaps while
    // the host launches them one by one: the sync is charged the gaps until its 200 us run out.
    std::vector<Piece> gpu = {{0, 300, kBusy}};
    double t = 300;
    for (int i = 0; i < 10; ++i) {
        gpu.push_back({t, t + 30, i == 0 ? kHostWait : kLaunchGap});
        gpu.push_back({t + 30, t + 40, kBusy});
        t += 40;
    }
    gpu.push_back({t, 1000, kHostWait});
    const SyncCharges c = charge_syncs({{100, 300}}, {gpu}, {{0, 1000, kHostBusy}}, kOneStep, kLabels);
    EXPECT_DOUBLE_EQ(c.per_call_us[0], 200);
    ASSERT_EQ(c.by_device[0].size(), 7u) << "six whole gaps and 20 us of the seventh";
    EXPECT_DOUBLE_EQ(c.by_device[0].back().end - c.by_device[0].back().start, 20);
    for (std::size_t i = 1; i < c.by_device[0].size(); ++i)
        EXPECT_LE(c.by_device[0][i - 1].end, c.by_device[0][i].start) << "never twice";
}

TEST(SyncCost, TheWalkStopsAtTheDataLoaderAtQueuedWorkAtTheNextDrainAndAtTheStepsEnd) {
    const std::vector<Piece> gpu = {{0, 100, kBusy}, {100, 400, kHostWait}, {400, 1000, kBusy}};
    // The host enters the DataLoader at 150: the idle after it is data_in_step's.
    auto c = charge_syncs({{0, 100}}, {gpu}, {{0, 150, kHostBusy}, {150, 400, kData}, {400, 1000, kHostBusy}}, kOneStep,
                          kLabels);
    EXPECT_DOUBLE_EQ(c.per_call_us[0], 50);
    // The idle's next kernel was queued long before (idle_other): the host was ahead again.
    const std::vector<Piece> queued = {{0, 100, kBusy}, {100, 400, kOther}, {400, 1000, kBusy}};
    c = charge_syncs({{0, 100}}, {queued}, {{0, 1000, kHostBusy}}, kOneStep, kLabels);
    EXPECT_DOUBLE_EQ(c.per_call_us[0], 0);
    // A second call that drains takes over from its start.
    const std::vector<Piece> two = {
        {0, 100, kBusy}, {100, 200, kHostWait}, {200, 300, kBusy}, {300, 700, kHostWait}, {700, 1000, kBusy}};
    c = charge_syncs({{0, 100}, {150, 300}}, {two}, {{0, 1000, kHostBusy}}, kOneStep, kLabels);
    EXPECT_DOUBLE_EQ(c.per_call_us[0], 50) << "100 to 150, where the second call begins";
    EXPECT_DOUBLE_EQ(c.per_call_us[1], 100) << "what it blocked: 200 to 300";
    // The step ends at 250.
    c = charge_syncs({{0, 100}}, {gpu}, {{0, 1000, kHostBusy}}, {{0, 250}, {250, 1000}}, kLabels);
    EXPECT_DOUBLE_EQ(c.per_call_us[0], 100) << "the first step's idle only, its credit 100";
    c = charge_syncs({{0, 100}}, {gpu}, {{0, 1000, kHostBusy}}, {{0, 120}, {120, 1000}}, kLabels);
    EXPECT_DOUBLE_EQ(c.per_call_us[0], 20);
}

TEST(SyncCost, EachDeviceIsWalkedAndTheCallIsChargedItsWorst) {
    const std::vector<Piece> a = {{0, 100, kBusy}, {100, 130, kHostWait}, {130, 1000, kBusy}};
    const std::vector<Piece> b = {{0, 80, kBusy}, {80, 1000, kHostWait}};
    const SyncCharges c = charge_syncs({{0, 100}}, {a, b}, {{0, 1000, kHostBusy}}, kOneStep, kLabels);
    EXPECT_DOUBLE_EQ(c.per_call_us[0], 80) << "device b: blocked 80 us of its work, idle after";
    EXPECT_EQ(c.by_device.size(), 2u);
}

TEST(SyncCost, NothingToChargeIsNothing) {
    EXPECT_TRUE(charge_syncs({}, {}, {}, {}, kLabels).per_call_us.empty());
    const SyncCharges c = charge_syncs({{5, 1}}, {{}}, {}, {}, kLabels);
    EXPECT_DOUBLE_EQ(c.per_call_us[0], 0) << "a call ending before it starts, no GPU pieces";
}

// On a trace: .item() every step while the GPU is busy, then the host launches the next 40 short
// kernels one by one. The idle between them is the sync's doing up to what it blocked; launch_bound is
// charged only the rest, and the two never add up to more than the GPU's idle.
TEST(SyncCost, OnATraceTheIdleIsSplitBetweenTheSyncAndLaunchBound) {
    TraceBuilder b;
    for (int s = 0; s < 4; ++s) {
        const double o = s * 10'000.0;
        b.step(s, o, 10'000).kernel("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn", o + 10, o + 20, 3000);
        b.python("train.py(42): train_step", o + 1000, 2100).op("aten::item", o + 1010, 2080);
        b.runtime("cudaStreamSynchronize", o + 1020, 2000);  // blocked 2000 us, drains at 3020
        b.op("aten::add", o + 3100, 6800);
        b.kernels("vectorized_elementwise_kernel", 40, o + 3100, 150, 10, 5);  // a launch every 150 us
    }
    baton::Result<Trace> t = parse_trace(b.json());
    ASSERT_TRUE(t.ok()) << t.error().message;
    const Analysis a = analyse(*t);
    ASSERT_EQ(a.syncs.size(), 1u);
    for (const Step& st : a.steps) {
        const GpuStep& g = st.gpus[0];
        EXPECT_NEAR(g.idle_sync_us, 2000, 1e-6) << "the gaps after the drain, up to the 2000 us it blocked";
        EXPECT_GT(g.idle_host_busy_us, 3000) << "the rest of the kernel-by-kernel gaps";
        EXPECT_LE(g.idle_sync_us + g.idle_host_busy_us, g.idle() + 1e-6);
    }
    EXPECT_NEAR(a.syncs[0].gpu_idle_us, 4 * 2000, 1e-6);
    ProfileRuleOptions o;
    double idle_cost = 0, idle = a.mean_gpu(0).idle();
    for (const auto& f : judge_profile(a, o))
        if (f.rule == "sync_in_step" || f.rule == "launch_bound") idle_cost += *f.evidence[0].average * 1000;
    EXPECT_LE(idle_cost, idle + 1e-6) << "findings never explain more idle than there is";
}

// A real A100 trace (Holistic Trace Analysis' event_sync test data): three kinds of sync, and the
// charges never exceed the GPU's idle.
TEST(SyncCost, ARealTracesSyncsAreChargedNoMoreThanItsIdle) {
    baton::Result<Trace> t = read_trace_file(baton::test::fixture_dir() + "/profile/hta/a100_event_sync.json.gz");
    ASSERT_TRUE(t.ok()) << t.error().message;
    const Analysis a = analyse(*t);
    ASSERT_GE(a.syncs.size(), 3u);
    double charged = 0;
    for (const SyncSite& s : a.syncs) charged += s.gpu_idle_us;
    EXPECT_LE(charged, a.mean_gpu(a.devices[0]).idle() * static_cast<double>(a.steps.size()) + 1e-6);
    for (const Step& st : a.steps)
        for (const GpuStep& g : st.gpus) EXPECT_LE(g.idle_sync_us + g.idle_host_busy_us, g.idle() + 1e-6);
}
