// The allocator's per-step figures before any OOM: a climb of what the steps keep is a leak (a
// start-up step and a plateau are not), and a peak step near the GPU's size says whether twice the
// batch fits.
#include "gpu_memory/step_memory.hpp"

#include <gtest/gtest.h>

using namespace baton::gpu_memory;

namespace {

constexpr std::uint64_t kStepMiB = 1048576, kStepGiB = 1073741824;

// `n` steps of 64 samples keeping `held(i)` and peaking 20 GiB above it.
template <class F>
std::vector<StepAllocation> steps(int n, F held) {
    std::vector<StepAllocation> out;
    for (int i = 0; i < n; ++i) out.push_back({i, 64, held(i), held(i) + 20 * kStepGiB});
    return out;
}

const baton::diagnose::Finding* find(const std::vector<baton::diagnose::Finding>& v, const std::string& rule) {
    for (const auto& f : v)
        if (f.rule == rule) return &f;
    return nullptr;
}

StepMemoryContext gpu0(std::uint64_t capacity = 80 * kStepGiB, std::uint64_t others = 0) {
    StepMemoryContext c;
    c.gpu = "GPU0";
    c.capacity = capacity;
    c.others_bytes = others;
    return c;
}

}  // namespace

TEST(StepMemory, AClimbOfWhatTheStepsKeepIsALeak) {
    const baton::Thresholds t;
    // 10 GiB of model, then 16 MiB more kept each step (total_loss += loss).
    const auto leaking = steps(60, [](int i) { return 10 * kStepGiB + static_cast<std::uint64_t>(i) * 16 * kStepMiB; });
    const auto found = judge_step_memory(leaking, gpu0(), t);
    const auto* f = find(found, "gpu_memory_leak");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->subject, "job");
    EXPECT_NE(f->summary.find("over 58 steps (16.0 MiB a step)"), std::string::npos) << f->summary;
    EXPECT_NE(f->summary.find("GPU0 is full in about"), std::string::npos) << f->summary;
    EXPECT_NE(f->snippet->find(".item()"), std::string::npos);
    EXPECT_EQ(f->evidence[0].metric, "cuda.allocated_at_step_end_bytes");
}

TEST(StepMemory, StartUpPlateausSmallGrowthAndNoiseAreNoLeak) {
    const baton::Thresholds t;
    // The first step creates Adam's state (+20 GiB), then nothing moves.
    auto plateau = steps(60, [](int i) { return i == 0 ? 10 * kStepGiB : 30 * kStepGiB; });
    EXPECT_EQ(find(judge_step_memory(plateau, gpu0(), t), "gpu_memory_leak"), nullptr);
    // Growth below gpu_memory_leak_bytes (256 MiB): 60 x 1 MiB.
    auto small = steps(60, [](int i) { return 10 * kStepGiB + static_cast<std::uint64_t>(i) * kStepMiB; });
    EXPECT_EQ(find(judge_step_memory(small, gpu0(), t), "gpu_memory_leak"), nullptr);
    // A cache filled once in the middle: it grew, but in one step and not in both halves.
    auto once = steps(60, [](int i) { return i < 30 ? 10 * kStepGiB : 11 * kStepGiB; });
    EXPECT_EQ(find(judge_step_memory(once, gpu0(), t), "gpu_memory_leak"), nullptr);
    // Too few steps to say.
    auto few = steps(10, [](int i) { return 10 * kStepGiB + static_cast<std::uint64_t>(i) * kStepGiB; });
    EXPECT_EQ(find(judge_step_memory(few, gpu0(), t), "gpu_memory_leak"), nullptr);
}

TEST(StepMemory, APeakNearTheGpusSizeSaysWhetherTwiceTheBatchFits) {
    const baton::Thresholds t;
    // 30 GiB kept, 43 GiB peak above it: 73 of 80 GiB (91 %).
    std::vector<StepAllocation> s = {{0, 64, 30 * kStepGiB, 73 * kStepGiB}, {1, 64, 30 * kStepGiB, 72 * kStepGiB}};
    auto found = judge_step_memory(s, gpu0(), t);
    const auto* f = find(found, "gpu_memory_near_oom");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->severity, baton::diagnose::Severity::warning);
    EXPECT_NE(f->summary.find("the peak step allocated 73.00 GiB of the 80.00 GiB GPU0 leaves the job (91 %), 7.00 GiB "
                              "of head-room; a batch of 128 (twice this one's) needs about 116.00 GiB and does not "
                              "fit: about 68 does"),
              std::string::npos)
        << f->summary;
    // Another process holding 5 GiB: the same peak is critical.
    found = judge_step_memory(s, gpu0(80 * kStepGiB, 5 * kStepGiB), t);
    ASSERT_NE(find(found, "gpu_memory_near_oom"), nullptr);
    EXPECT_EQ(find(found, "gpu_memory_near_oom")->severity, baton::diagnose::Severity::critical);
    // Comfortable: nothing said. Unknown capacity: nothing said.
    s = {{0, 64, 30 * kStepGiB, 50 * kStepGiB}};
    EXPECT_TRUE(judge_step_memory(s, gpu0(), t).empty());
    EXPECT_TRUE(judge_step_memory({{0, 64, 30 * kStepGiB, 79 * kStepGiB}}, StepMemoryContext{}, t).empty());
}

TEST(StepMemory, TheBatchsMemoryAsALine) {
    // One batch size: from what the steps keep to the highest peak.
    auto one = batch_memory_model({{0, 64, 10 * kStepGiB, 30 * kStepGiB}, {1, 64, 10 * kStepGiB, 29 * kStepGiB}});
    ASSERT_TRUE(one);
    EXPECT_EQ(one->sizes, 1u);
    EXPECT_EQ(largest_batch(*one, 50.0 * kStepGiB), 128);
    EXPECT_EQ(largest_batch(*one, 10.1 * kStepGiB), 0);
    // A batch that grew: the line through each size's peak (2 GiB fixed, 0.5 GiB a sample), whatever
    // the steps keep.
    auto grown = batch_memory_model({{0, 8, kStepGiB, 6 * kStepGiB},
                                     {1, 16, kStepGiB, 10 * kStepGiB},
                                     {2, 16, kStepGiB, 9 * kStepGiB},
                                     {3, 32, kStepGiB, 18 * kStepGiB}});
    ASSERT_TRUE(grown);
    EXPECT_EQ(grown->sizes, 3u);
    EXPECT_NEAR(grown->fixed, 2.0 * kStepGiB, 1e6);
    EXPECT_NEAR(grown->per_sample, 0.5 * kStepGiB, 1e6);
    EXPECT_EQ(largest_batch(*grown, 76.0 * kStepGiB), 148);
    // No growth in the step, or no samples: cannot tell.
    EXPECT_FALSE(batch_memory_model({{0, 64, 10 * kStepGiB, 10 * kStepGiB}}));
    EXPECT_FALSE(batch_memory_model({{0, 0, 10 * kStepGiB, 30 * kStepGiB}}));
    EXPECT_FALSE(batch_memory_model({}));
}
