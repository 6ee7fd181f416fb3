// Each kind of out-of-memory failure, from the evidence there is, gives its cause, its breakdown
// and its fix: activations, optimizer state, fragmentation, another process, a request larger
// than the GPU; from the message alone, from the per-step figures, from a capture.
#include "gpu_memory/oom_autopsy.hpp"

#include <gtest/gtest.h>

#include "capture_builder.hpp"

using namespace baton::gpu_memory;
using namespace baton::gpu_memory::testing;
using nlohmann::json;

namespace {

OomCapture capture_of(CaptureBuilder& b) {
    auto c = parse_oom_capture(b.json());
    EXPECT_TRUE(c.ok()) << c.error().message;
    return c.ok() ? *c : OomCapture{};
}

std::uint64_t use(const OomAutopsy& a, MemoryUse u) {
    for (const auto& [x, bytes] : a.uses)
        if (x == u) return bytes;
    return 0;
}

// What the steps kept, after the first two, their highest peak at `batch`, over `n` steps, as a line.
StepMemory step_memory(std::uint64_t held, std::uint64_t held_first, std::uint64_t peak, std::int64_t batch,
                       std::int64_t n) {
    StepMemory m;
    m.held_bytes = held;
    m.held_first = held_first;
    m.peak_bytes = peak;
    m.batch_size = batch;
    m.steps = n;
    m.model = batch_memory_model({{0, batch, held, peak}});
    return m;
}

double evidence(const baton::diagnose::Finding& f, const std::string& metric) {
    for (const auto& e : f.evidence)
        if (e.metric == metric) return e.maximum.value_or(-1);
    return -1;
}

constexpr std::uint64_t kBase = 0x7f0000000000;

}  // namespace

TEST(OomAutopsy, ActivationsDominate) {
    // 80 GiB GPU: 4 GiB of parameters and 4 of gradients (found by the hook), 8 of Adam's state, and
    // 60 GiB of forward activations when a 2 GiB request fails in the forward pass.
    CaptureBuilder b;
    b.segment(kBase, json::array({json::array({4 * kGiB, "active_allocated", nullptr}),
                                  json::array({4 * kGiB, "active_allocated", nullptr}),
                                  json::array({8 * kGiB, "active_allocated", nullptr}),
                                  json::array({60 * kGiB, "active_allocated", forward_stack()})}))
        .tensor("parameters", kBase, 4 * kGiB)
        .tensor("gradients", kBase + 4 * kGiB, 4 * kGiB)
        .tensor("optimizer_state", kBase + 8 * kGiB, 8 * kGiB)
        .set("history", true)
        .set("requested_bytes", 2 * kGiB)
        .set("device_free_bytes", kGiB)
        .set("stack", forward_stack());
    const OomCapture c = capture_of(b);
    OomInputs in;
    in.capture = &c;
    in.steps = step_memory(16 * kGiB, 16 * kGiB, 74 * kGiB, 64, 12);
    const OomAutopsy a = explain_oom(in);
    EXPECT_EQ(a.cause, OomCause::memory_in_use);
    ASSERT_FALSE(a.uses.empty());
    EXPECT_EQ(a.uses.front().first, MemoryUse::activations);
    EXPECT_EQ(use(a, MemoryUse::activations), 60 * kGiB);
    EXPECT_EQ(use(a, MemoryUse::parameters), 4 * kGiB);
    EXPECT_EQ(use(a, MemoryUse::gradients), 4 * kGiB);
    EXPECT_EQ(use(a, MemoryUse::optimizer_state), 8 * kGiB);
    EXPECT_EQ(a.failed_at, "train.py:42 in forward");
    ASSERT_FALSE(a.sites.empty());
    EXPECT_EQ(a.sites[0].where, "train.py:42 in forward");
    EXPECT_EQ(a.sites[0].bytes, 60 * kGiB);
    EXPECT_EQ(a.amp_saves, 30 * kGiB);
    // (80 * 0.95 - 16) / ((74 - 16) / 64) = 66.2: a batch of 66 would have fit.
    EXPECT_EQ(a.largest_batch, 66);
    EXPECT_NE(a.fix.find("mixed precision"), std::string::npos) << a.fix;
    EXPECT_NE(a.fix.find("checkpointing"), std::string::npos);
    EXPECT_NE(a.fix.find("A batch of about 66 fits (this one: 64)"), std::string::npos) << a.fix;
    EXPECT_NE(a.snippet.find("autocast"), std::string::npos);
    const auto f = oom_finding(a, "torch.OutOfMemoryError: CUDA out of memory.");
    EXPECT_EQ(f.rule, "cuda_oom");
    EXPECT_EQ(evidence(f, "oom.activations_bytes"), static_cast<double>(60 * kGiB));
    EXPECT_EQ(evidence(f, "oom.requested_bytes"), static_cast<double>(2 * kGiB));
    EXPECT_NE(f.summary.find("activations 60.00 GiB"), std::string::npos) << f.summary;

    // Already under autocast: mixed precision is not advised again, checkpointing is.
    b.set("autocast", true);
    const OomCapture amp = capture_of(b);
    in.capture = &amp;
    const OomAutopsy with_amp = explain_oom(in);
    EXPECT_FALSE(with_amp.amp_saves);
    EXPECT_EQ(with_amp.fix.find("mixed precision"), std::string::npos) << with_amp.fix;
    EXPECT_NE(with_amp.snippet.find("checkpoint"), std::string::npos);
}

TEST(OomAutopsy, OptimizerStateDominates) {
    // The first optimizer step of a large model: Adam's state is created, 2 x the parameters.
    CaptureBuilder b;
    b.segment(kBase, json::array({json::array({16 * kGiB, "active_allocated", nullptr}),
                                  json::array({16 * kGiB, "active_allocated", nullptr}),
                                  json::array({32 * kGiB, "active_allocated", optimizer_stack()}),
                                  json::array({2 * kGiB, "active_allocated", nullptr})}))
        .tensor("parameters", kBase, 16 * kGiB)
        .tensor("gradients", kBase + 16 * kGiB, 16 * kGiB)
        .set("history", true)
        .set("phase", "optimizer")
        .set("requested_bytes", 16 * kGiB)
        .set("device_free_bytes", 10 * kGiB)
        .set("stack", optimizer_stack());
    const OomCapture c = capture_of(b);
    OomInputs in;
    in.capture = &c;
    const OomAutopsy a = explain_oom(in);
    EXPECT_EQ(a.cause, OomCause::memory_in_use);
    EXPECT_EQ(a.uses.front().first, MemoryUse::optimizer_state);
    EXPECT_EQ(use(a, MemoryUse::optimizer_state), 32 * kGiB);  // by its stack: the hook had not found it yet
    EXPECT_EQ(use(a, MemoryUse::other), 2 * kGiB);             // the optimizer phase: not activations
    EXPECT_EQ(a.phase, StepPhase::optimizer);
    EXPECT_NE(a.fix.find("ZeroRedundancyOptimizer"), std::string::npos);
    EXPECT_NE(a.fix.find("8-bit Adam"), std::string::npos);
    EXPECT_EQ(a.failed_at, "train.py:95 in <module>");
}

TEST(OomAutopsy, FragmentationARequestLargerThanTheLargestFreeBlock) {
    // 20 GiB of the reserve is free in 1 GiB pieces between live blocks; a 3 GiB request fails.
    json blocks = json::array();
    for (int i = 0; i < 20; ++i) {
        blocks.push_back(json::array({2 * kGiB, "active_allocated", nullptr}));
        blocks.push_back(json::array({kGiB, "inactive", nullptr}));
    }
    CaptureBuilder b;
    b.segment(kBase, blocks).set("requested_bytes", 3 * kGiB).set("device_free_bytes", 512 * kMiB);
    const OomCapture c = capture_of(b);
    OomInputs in;
    in.capture = &c;
    const OomAutopsy a = explain_oom(in);
    EXPECT_EQ(a.cause, OomCause::fragmentation);
    EXPECT_EQ(a.unallocated, 20 * kGiB);
    EXPECT_EQ(a.largest_free_block, kGiB);
    EXPECT_NE(a.summary.find("fragmentation: its largest free block 1.00 GiB"), std::string::npos) << a.summary;
    EXPECT_EQ(a.snippet, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
    EXPECT_NE(a.fix.find("PyTorch >= 2.1"), std::string::npos);
    // PyTorch 2.0 has no expandable segments: the advice says so and gives what it has.
    b.set("torch", "2.0.1+cu118");
    const OomCapture old = capture_of(b);
    in.capture = &old;
    const OomAutopsy a2 = explain_oom(in);
    EXPECT_EQ(a2.snippet, "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128");
    EXPECT_NE(a2.fix.find("2.0.1+cu118 has no expandable segments"), std::string::npos);
    EXPECT_EQ(evidence(oom_finding(a, ""), "oom.largest_free_block_bytes"), static_cast<double>(kGiB));
}

TEST(OomAutopsy, AnotherProcessHeldTheMemory) {
    // The job holds 20 GiB of an 80 GiB GPU; another user's notebook holds 58.
    const auto m = parse_oom_message(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.19 "
        "GiB of which 1.19 GiB is free. Process 4121 has 58.00 GiB memory in use. Including non-PyTorch memory, this "
        "process has 20.00 GiB memory in use. Of the allocated memory 19.00 GiB is allocated by PyTorch, and 200.00 "
        "MiB is reserved by PyTorch but unallocated.");
    OomInputs in;
    in.message = m;
    GpuAtFailure g;
    g.index = 2;  // NVML's index: the job saw it as cuda:0
    g.total_bytes = 80 * kGiB;
    g.processes = {{4121, 58 * kGiB, "python3", "bob", false}, {777, 20 * kGiB, "python3", "ana", true}};
    in.gpu = g;
    const OomAutopsy a = explain_oom(in);
    EXPECT_EQ(a.cause, OomCause::other_processes);
    EXPECT_EQ(a.gpu, 2u);
    EXPECT_EQ(a.others_bytes, 58 * kGiB);
    ASSERT_EQ(a.others.size(), 1u);  // the job's own process is not "another"
    EXPECT_NE(a.summary.find("GPU2"), std::string::npos);
    EXPECT_NE(a.summary.find("58.00 GiB by pid 4121 (python3, user bob)"), std::string::npos) << a.summary;
    EXPECT_NE(a.fix.find("not the batch size"), std::string::npos);
    EXPECT_EQ(evidence(oom_finding(a, ""), "oom.other_processes_bytes"), static_cast<double>(58 * kGiB));
    // Without NVML the message's own list of processes is used.
    in.gpu.reset();
    const OomAutopsy b = explain_oom(in);
    EXPECT_EQ(b.cause, OomCause::other_processes);
    EXPECT_NE(b.summary.find("58.00 GiB by pid 4121"), std::string::npos) << b.summary;
}

TEST(OomAutopsy, FromTheMessageAloneTheFixFollowsTheNumbers) {
    OomInputs in;
    // More unallocated reserve than the request: fragmentation first.
    in.message = parse_oom_message(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 "
        "GiB of which 1.23 GiB is free. Including non-PyTorch memory, this process has 77.50 GiB memory in use. Of the "
        "allocated memory 70.12 GiB is allocated by PyTorch, and 6.50 GiB is reserved by PyTorch but unallocated.");
    EXPECT_EQ(explain_oom(in).cause, OomCause::fragmentation);
    // The memory in use: no breakdown without the hook, the general advice and how to get one.
    in.message = parse_oom_message(
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.56 GiB "
        "already allocated; 4.75 MiB free; 14.70 GiB reserved in total by PyTorch)");
    OomAutopsy a = explain_oom(in);
    EXPECT_EQ(a.cause, OomCause::memory_in_use);
    EXPECT_TRUE(a.uses.empty());
    EXPECT_NE(a.fix.find("--memory-history"), std::string::npos);
    EXPECT_NE(a.summary.find("14.56 GiB allocated by PyTorch"), std::string::npos) << a.summary;
    // With the per-step figures: what the steps kept (the model) against this step's growth.
    in.steps = step_memory(6 * kGiB, 6 * kGiB, 14 * kGiB, 32, 100);
    a = explain_oom(in);
    EXPECT_EQ(use(a, MemoryUse::model_state), 6 * kGiB);
    EXPECT_EQ(use(a, MemoryUse::activations), static_cast<std::uint64_t>(14.56 * kGiB + 0.5) - 6 * kGiB);
    // One request larger than the GPU: no freeing helps.
    in.message = parse_oom_message(
        "CUDA out of memory. Tried to allocate 130206.04 GiB. GPU 0 has a total capacity of 23.56 GiB of which 16.57 "
        "GiB is free. Of the allocated memory 5.45 GiB is allocated by PyTorch, and 1.17 GiB is reserved by PyTorch "
        "but unallocated.");
    a = explain_oom(in);
    EXPECT_EQ(a.cause, OomCause::too_large);
    EXPECT_NE(a.fix.find("No freeing helps"), std::string::npos);
    // A per-process limit.
    in.message = parse_oom_message(
        "RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 79.00 GiB total capacity; 19.50 GiB "
        "already allocated; 50.00 GiB free; 20.00 GiB allowed; 19.80 GiB reserved in total by PyTorch)");
    EXPECT_EQ(explain_oom(in).cause, OomCause::limit);
    // No numbers at all.
    in.message = parse_oom_message("RuntimeError: CUDA error: out of memory");
    in.steps.reset();
    a = explain_oom(in);
    EXPECT_EQ(a.cause, OomCause::unknown);
    EXPECT_NE(a.summary.find("without the allocator's figures"), std::string::npos);
}

// What the steps keep grew by a quarter or more before the failure: the leak is the cause, whatever
// the batch, so no batch "fits" and the fix is the tensor kept from each step.
TEST(OomAutopsy, AClimbOfWhatTheStepsKeptIsTheCause) {
    OomInputs in;
    in.message = parse_oom_message(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of "
        "79.19 GiB of which 300.00 MiB is free. Of the allocated memory 77.00 GiB is allocated by PyTorch, and 1.00 "
        "GiB is reserved by PyTorch but unallocated.");
    in.steps = step_memory(70 * kGiB, 20 * kGiB, 76 * kGiB, 32, 400);
    OomAutopsy a = explain_oom(in);
    EXPECT_EQ(a.cause, OomCause::memory_in_use);
    ASSERT_TRUE(a.kept_growth);
    EXPECT_FALSE(a.largest_batch);
    EXPECT_NE(a.fix.find("What the steps keep grew from 20.00 GiB to 70.00 GiB over 400 steps"), std::string::npos)
        << a.fix;
    EXPECT_NE(a.snippet.find(".item()"), std::string::npos);
    // A steady model (the first steps' optimizer state aside) is no leak.
    in.steps = step_memory(70 * kGiB, 66 * kGiB, 76 * kGiB, 32, 400);
    a = explain_oom(in);
    EXPECT_FALSE(a.kept_growth);
    EXPECT_TRUE(a.largest_batch);
}

TEST(OomAutopsy, TorchVersions) {
    EXPECT_TRUE(torch_at_least("2.1.0", 2, 1));
    EXPECT_TRUE(torch_at_least("2.4.1+cu121", 2, 1));
    EXPECT_TRUE(torch_at_least("3.0", 2, 1));
    EXPECT_FALSE(torch_at_least("2.0.1", 2, 1));
    EXPECT_FALSE(torch_at_least("1.13.1", 2, 1));
    EXPECT_FALSE(torch_at_least("", 2, 1));
    EXPECT_FALSE(torch_at_least("nightly", 2, 1));
}
