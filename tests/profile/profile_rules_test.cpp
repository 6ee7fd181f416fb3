// The profile's findings: each rule fires on a Kineto-layout timeline built for it, with its cost in
// milliseconds per step, and stays silent on a healthy step and under [profile] min_share.
#include "profile/profile_rules.hpp"

#include <gtest/gtest.h>

#include "profile/trace_builder.hpp"

using namespace baton::profile;
using baton::diagnose::Finding;
using baton::diagnose::Severity;
using baton::test::TraceBuilder;

namespace {

std::vector<Finding> judged(const TraceBuilder& b, double min_share = 0.05) {
    baton::Result<Trace> t = parse_trace(b.json());
    EXPECT_TRUE(t.ok()) << t.error().message;
    if (!t.ok()) return {};
    ProfileRuleOptions o;
    o.min_share = min_share;
    o.cpus = 8;
    return judge_profile(analyse(*t), o);
}

const Finding* find(const std::vector<Finding>& fs, const std::string& rule) {
    for (const Finding& f : fs)
        if (f.rule == rule) return &f;
    return nullptr;
}

std::string rules(const std::vector<Finding>& fs) {
    std::string s;
    for (const Finding& f : fs) s += f.rule + "[" + f.subject + "] ";
    return s;
}

const char* kBf16Gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64";
const char* kNccl = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";

// Two 10 ms steps of a GPU kept busy: a bf16 GEMM, an all-reduce under it, a pinned copy, a short
// DataLoader wait with workers.
TraceBuilder healthy() {
    TraceBuilder b;
    for (int s = 0; s < 2; ++s) {
        const double o = s * 10'000.0;
        b.step(s, o, 10'000)
            .op("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", o, 100, 1, "user_annotation")
            .op("aten::linear", o + 100, 9000)
            .memcpy("Memcpy HtoD (Pinned -> Device)", o + 100, o + 110, 50, 1 << 20)
            .kernel(kBf16Gemm, o + 120, o + 160, 9700)
            .kernel(kNccl, o + 2000, o + 5000, 3000, 0, 20);
    }
    return b;
}

}  // namespace

TEST(ProfileRules, AHealthyStepHasNoFinding) {
    const std::vector<Finding> fs = judged(healthy());
    EXPECT_TRUE(fs.empty()) << rules(fs);
}

TEST(ProfileRules, LaunchBoundManyShortKernelsTheHostIssuesTooSlowly) {
    TraceBuilder b;
    b.step(1, 0, 10'000)
        .op("aten::linear", 0, 9990)
        .kernels("void at::native::vectorized_elementwise_kernel<4>", 300, 0, 30, 5);
    const std::vector<Finding> fs = judged(b);
    const Finding* f = find(fs, "launch_bound");
    ASSERT_NE(f, nullptr) << rules(fs);
    EXPECT_EQ(f->subject, "gpu:0");
    EXPECT_EQ(f->severity, Severity::warning);
    ASSERT_FALSE(f->evidence.empty());
    EXPECT_NEAR(*f->evidence[0].average, 8.5, 0.2) << "the idle ms a step while the host issued work";
    EXPECT_NE(f->summary.find("of each 10.00 ms step"), std::string::npos) << f->summary;
    ASSERT_TRUE(f->snippet);
    EXPECT_NE(f->snippet->find("reduce-overhead"), std::string::npos);

    // Long kernels with the same gaps: the GPU waits, but not on launches.
    TraceBuilder slow;
    slow.step(1, 0, 10'000).op("aten::linear", 0, 9990).kernels("k_long", 20, 0, 500, 400);
    EXPECT_EQ(find(judged(slow), "launch_bound"), nullptr);
}

TEST(ProfileRules, SyncInStepAtTheUsersLineCostingTheGpusIdleTime) {
    TraceBuilder b;
    for (int s = 0; s < 2; ++s) {
        const double o = s * 1000.0;
        // The GPU runs until 670 while the host waits from 580; it then idles 90 us until the next kernel.
        b.step(s, o, 1000).kernel("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn", o + 10, o + 20, 650);
        b.python("train.py(42): train_step", o + 560, 140).op("aten::item", o + 565, 125);
        b.runtime("cudaStreamSynchronize", o + 580, 100);
        b.kernel("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn", o + 700, o + 760, 220);
    }
    const std::vector<Finding> fs = judged(b);
    const Finding* f = find(fs, "sync_in_step");
    ASSERT_NE(f, nullptr) << rules(fs);
    EXPECT_EQ(f->subject, "train.py(42): train_step");
    EXPECT_EQ(f->severity, Severity::info) << "9 % of the step";
    EXPECT_NEAR(*f->evidence[0].average, 0.09, 1e-9) << "90 us of GPU idle a step";
    EXPECT_NE(f->summary.find("aten::item"), std::string::npos) << f->summary;
    EXPECT_EQ(find(judged(b, 0.10), "sync_in_step"), nullptr) << "under min_share: not raised";
}

TEST(ProfileRules, PageableCopiesButNotPinnedOnes) {
    TraceBuilder b;
    b.step(1, 0, 1000)
        .memcpy("Memcpy HtoD (Pageable -> Device)", 10, 20, 100, 4'000'000)
        .kernel(kBf16Gemm, 120, 130, 860);
    const std::vector<Finding> fs = judged(b);
    const Finding* f = find(fs, "pageable_copy");
    ASSERT_NE(f, nullptr);
    EXPECT_NEAR(*f->evidence[0].average, 0.1, 1e-9);
    EXPECT_NE(f->summary.find("4 MB"), std::string::npos) << f->summary;
    ASSERT_TRUE(f->snippet);
    EXPECT_NE(f->snippet->find("pin_memory=True"), std::string::npos);

    TraceBuilder pinned;
    pinned.step(1, 0, 1000).memcpy("Memcpy HtoD (Pinned -> Device)", 10, 20, 100, 4'000'000);
    EXPECT_EQ(find(judged(pinned), "pageable_copy"), nullptr);
}

// The fix is what the GPU's generation takes (its deviceProperties' compute capability): no TF32 or
// bf16 before Ampere, fp8 named from Ada on, both ways when the trace does not say.
TEST(ProfileRules, Fp32MatmulAdviceIsWhatTheGpuCanTake) {
    struct Case {
        const char* name;
        int major, minor;
        std::vector<const char*> has, lacks;
    };
    const Case cases[] = {
        {"Tesla P100-PCIE-16GB", 6, 0, {"predates tensor cores", "GradScaler"}, {"allow_tf32", "bfloat16"}},
        {"Tesla V100-SXM2-32GB", 7, 0, {"Volta", "GradScaler", "torch.float16"}, {"allow_tf32", "bfloat16", "fp8"}},
        {"Tesla T4", 7, 5, {"Turing", "GradScaler"}, {"allow_tf32", "bfloat16"}},
        {"NVIDIA A100-SXM4-80GB", 8, 0, {"Ampere", "allow_tf32", "bfloat16"}, {"fp8", "GradScaler("}},
        {"NVIDIA L4", 8, 9, {"Ada", "allow_tf32", "fp8"}, {"GradScaler("}},
        {"NVIDIA H100 80GB HBM3", 9, 0, {"Hopper", "allow_tf32", "bfloat16", "fp8"}, {"GradScaler("}},
        {"NVIDIA B200", 10, 0, {"Blackwell", "fp8"}, {}},
    };
    for (const Case& c : cases) {
        TraceBuilder b;
        b.device_properties(0, c.name, c.major, c.minor).step(1, 0, 1000).kernel("volta_sgemm_128x64_nn", 0, 10, 500);
        const std::vector<Finding> fs = judged(b);
        const Finding* f = find(fs, "fp32_matmul");
        ASSERT_NE(f, nullptr) << c.name;
        ASSERT_TRUE(f->snippet);
        const std::string all = f->recommendation + "\n" + *f->snippet;
        for (const char* part : c.has)
            EXPECT_NE(all.find(part), std::string::npos) << c.name << ": " << part << "\n" << all;
        for (const char* part : c.lacks)
            EXPECT_EQ(all.find(part), std::string::npos) << c.name << ": " << part << "\n" << all;
        EXPECT_NE(f->summary.find(c.name), std::string::npos) << f->summary;
    }
    // No deviceProperties: both ways, and said why.
    TraceBuilder b;
    b.step(1, 0, 1000).kernel("ampere_sgemm_128x64_nn", 0, 10, 500);
    const std::vector<Finding> plain = judged(b);  // (kept: find points into it)
    const Finding* f = find(plain, "fp32_matmul");
    ASSERT_NE(f, nullptr);
    EXPECT_NE(f->recommendation.find("does not say which GPU"), std::string::npos) << f->recommendation;
    EXPECT_NE(f->snippet->find("allow_tf32"), std::string::npos);
    EXPECT_NE(f->snippet->find("GradScaler"), std::string::npos);
}

TEST(ProfileRules, Fp32MatmulOnlyForSimtSgemm) {
    TraceBuilder b;
    b.step(1, 0, 1000).kernel("ampere_sgemm_128x64_nn", 0, 10, 500);
    const std::vector<Finding> fs = judged(b);
    const Finding* f = find(fs, "fp32_matmul");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->severity, Severity::warning);
    EXPECT_NEAR(*f->evidence[0].average, 0.5, 1e-9);
    ASSERT_TRUE(f->snippet);
    EXPECT_NE(f->snippet->find("allow_tf32 = True"), std::string::npos);
    for (const char* fine : {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(Params)",
                             kBf16Gemm, "volta_h884gemm_64x64_ldg8_nn"}) {
        TraceBuilder t;
        t.step(1, 0, 1000).kernel(fine, 0, 10, 500);
        EXPECT_EQ(find(judged(t), "fp32_matmul"), nullptr) << fine;
    }
}

TEST(ProfileRules, CommExposedIsTheNcclTimeWithoutCompute) {
    TraceBuilder b;
    b.step(1, 0, 1000).kernel(kBf16Gemm, 0, 10, 300).kernel(kNccl, 5, 210, 300, 0, 20);  // [210, 510): 200 exposed
    const std::vector<Finding> fs = judged(b);
    const Finding* f = find(fs, "comm_exposed");
    ASSERT_NE(f, nullptr);
    EXPECT_NEAR(*f->evidence[0].average, 0.2, 1e-9);
    EXPECT_NE(f->summary.find("33 % of its 0.30 ms of NCCL time is hidden"), std::string::npos) << f->summary;

    TraceBuilder hidden;
    hidden.step(1, 0, 1000).kernel(kBf16Gemm, 0, 10, 900).kernel(kNccl, 5, 210, 300, 0, 20);
    EXPECT_EQ(find(judged(hidden), "comm_exposed"), nullptr);
}

TEST(ProfileRules, DataInStepWithTheLoaderAdviceAndTheBiggestCostFirst) {
    TraceBuilder b;
    b.step(1, 0, 1000)
        .op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 300, 1, "user_annotation")
        .memcpy("Memcpy HtoD (Pageable -> Device)", 310, 320, 100, 1'000'000)
        .kernel(kBf16Gemm, 430, 440, 500);
    const std::vector<Finding> fs = judged(b);
    ASSERT_EQ(fs.size(), 2u) << rules(fs);
    EXPECT_EQ(fs[0].rule, "data_in_step") << "300 us before 100 us";
    EXPECT_EQ(fs[0].subject, "host");
    EXPECT_NE(fs[0].summary.find("num_workers=0"), std::string::npos) << fs[0].summary;
    ASSERT_TRUE(fs[0].snippet);
    EXPECT_NE(fs[0].snippet->find("num_workers=7"), std::string::npos) << "8 cores, one for the trainer";
    EXPECT_EQ(fs[1].rule, "pageable_copy");
    EXPECT_EQ(fs[0].doc, "docs/findings.md#data_in_step");

    // With worker processes the trace does not say how many: more, and cheaper batches.
    TraceBuilder w;
    w.step(1, 0, 1000)
        .op("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 300, 1, "user_annotation")
        .kernel(kBf16Gemm, 310, 320, 600);
    const std::vector<Finding> ws = judged(w);
    ASSERT_EQ(ws.size(), 1u) << rules(ws);
    EXPECT_NE(ws[0].recommendation.find("has worker processes"), std::string::npos) << ws[0].recommendation;
    EXPECT_NE(ws[0].recommendation.find("up to 7 with 8 cores for 1 GPU(s)"), std::string::npos);
    ASSERT_TRUE(ws[0].snippet);
    EXPECT_NE(ws[0].snippet->find("num_workers=7, pin_memory=True"), std::string::npos) << *ws[0].snippet;
}

// data_in_step is input_bound's symptom: the same scale ([thresholds] data_wait_percent and
// data_wait_warning_percent), whatever [profile] min_share says.
TEST(ProfileRules, DataInStepTakesInputBoundsScale) {
    auto with_wait = [](double wait_us) {
        TraceBuilder b;
        b.step(1, 0, 1000)
            .op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, wait_us, 1, "user_annotation")
            .kernel(kBf16Gemm, wait_us + 10, wait_us + 20, 900 - wait_us);
        return b;
    };
    const std::vector<Finding> six = judged(with_wait(60)), twenty = judged(with_wait(200));
    const Finding* f = find(six, "data_in_step");
    ASSERT_NE(f, nullptr) << "6 % is above 5 %";
    EXPECT_EQ(f->severity, Severity::info) << "as input_bound at 6 %";
    EXPECT_NE(f->evidence[0].threshold.find("[thresholds] data_wait_percent"), std::string::npos)
        << f->evidence[0].threshold;
    f = find(twenty, "data_in_step");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->severity, Severity::warning) << "20 % is above 15 %";
    EXPECT_EQ(find(judged(with_wait(40), 0.01), "data_in_step"), nullptr) << "4 %: under 5 %, whatever min_share";
    EXPECT_NE(find(judged(with_wait(60), 0.5), "data_in_step"), nullptr) << "6 %: raised, whatever min_share";
}

TEST(ProfileRules, EveryRuleHasItsId) {
    EXPECT_EQ(profile_rule_ids().size(), 6u);
    EXPECT_TRUE(judge_profile(Analysis{}).empty()) << "no steps, nothing to judge";
}
