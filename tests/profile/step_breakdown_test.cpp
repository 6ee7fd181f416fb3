// A step's time broken down: GPU timelines built in Kineto's layout whose answer is known (compute
// over communication over copies, the idle split by when the next activity was launched, the
// host's phases, the syncs at their Python line), and real CPU traces recorded here by Debian's
// PyTorch (a slow Dataset, an .item() per step).
#include "profile/step_breakdown.hpp"

#include <gtest/gtest.h>

#include "core/run_program.hpp"
#include "profile/trace_builder.hpp"
#include "test_support.hpp"

using namespace baton::profile;
using baton::test::TraceBuilder;

namespace {

Analysis analysed(const TraceBuilder& b) {
    baton::Result<Trace> t = parse_trace(b.json());
    EXPECT_TRUE(t.ok()) << t.error().message;
    return t.ok() ? analyse(*t) : Analysis{};
}

double slice(const GpuStep& g, GpuSlice s) {
    return g.us[static_cast<std::size_t>(s)];
}

double phase(const HostStep& h, HostPhase p) {
    return h.us[static_cast<std::size_t>(p)];
}

double sum(const auto& a) {
    double s = 0;
    for (double v : a) s += v;
    return s;
}

const char* kLoader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

}  // namespace

TEST(StepBreakdown, ComputeHidesCommunicationAndThePiecesAddUpToTheStep) {
    TraceBuilder b;
    b.step(7, 0, 1000)
        .kernel("ampere_sgemm_128x64_nn", 10, 100, 400)
        .kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 20, 400, 300, 0, 20)
        .memcpy("Memcpy HtoD (Pageable -> Device)", 700, 750, 50, 1'000'000);
    const Analysis a = analysed(b);
    ASSERT_EQ(a.steps.size(), 1u);
    EXPECT_EQ(a.steps[0].number, 7);
    ASSERT_EQ(a.devices, std::vector<int>{0});
    const GpuStep& g = a.steps[0].gpus[0];
    EXPECT_DOUBLE_EQ(slice(g, GpuSlice::gemm), 400);
    EXPECT_DOUBLE_EQ(slice(g, GpuSlice::communication), 200) << "the NCCL time under the GEMM is not spent";
    EXPECT_DOUBLE_EQ(g.comm_us, 300);
    EXPECT_DOUBLE_EQ(g.comm_hidden_us, 100);
    EXPECT_DOUBLE_EQ(slice(g, GpuSlice::memcpy_h2d), 50);
    EXPECT_DOUBLE_EQ(slice(g, GpuSlice::idle_host_wait), 10 + 200) << "before the first launch, and the tail";
    EXPECT_DOUBLE_EQ(slice(g, GpuSlice::idle_launch_gap), 90 + 50)
        << "the GEMM launched at 10 started at 100; the copy launched as the GPU went idle started 50 us later";
    EXPECT_DOUBLE_EQ(slice(g, GpuSlice::idle_other), 0);
    EXPECT_DOUBLE_EQ(sum(g.us), 1000) << "a partition of the step";
    EXPECT_EQ(g.kernels, 2u);
    EXPECT_DOUBLE_EQ(g.fp32_gemm_us, 400) << "sgemm: fp32 on the CUDA cores";
    EXPECT_EQ(g.pageable_h2d_copies, 1u);
    EXPECT_EQ(g.pageable_h2d_bytes, 1'000'000);
    EXPECT_DOUBLE_EQ(g.pageable_h2d_us, 50);
    ASSERT_EQ(a.kernels.size(), 2u);
    EXPECT_EQ(a.kernels[0].name, "ampere_sgemm_128x64_nn") << "the most time first";
    EXPECT_EQ(a.kernels[0].precision, GemmPrecision::fp32);
    EXPECT_EQ(a.kernels[1].kind, KernelClass::communication);
    EXPECT_DOUBLE_EQ(a.gemm_precision_us[static_cast<std::size_t>(GemmPrecision::fp32)], 400);
}

TEST(StepBreakdown, IdleIsSplitByWhenTheNextKernelWasLaunched) {
    TraceBuilder b;
    b.step(1, 0, 1000)
        .kernel("k_a", 0, 10, 90)      // leading gap [0, 10): launched at 0, a launch gap
        .kernel("k_b", 50, 104, 96)    // queued at 50, 4 us after k_a: back to back
        .kernel("k_c", 60, 400, 100)   // queued at 60, waited 200 us for something else
        .kernel("k_d", 700, 710, 90);  // launched 200 us after the GPU went idle
    const Analysis a = analysed(b);
    const GpuStep& g = a.steps[0].gpus[0];
    EXPECT_DOUBLE_EQ(slice(g, GpuSlice::idle_launch_gap), 10 + 4 + 10);
    EXPECT_DOUBLE_EQ(slice(g, GpuSlice::idle_other), 200);
    EXPECT_DOUBLE_EQ(slice(g, GpuSlice::idle_host_wait), 200 + 200) << "before k_d's launch, and the tail";
    EXPECT_DOUBLE_EQ(g.busy(), 90 + 96 + 100 + 90);
    EXPECT_DOUBLE_EQ(g.idle() + g.busy(), 1000);
}

TEST(StepBreakdown, GpuTimeIsCutAtTheStepsAndKernelsCountInTheStepTheyStartIn) {
    TraceBuilder b;
    b.step(1, 0, 100).step(2, 100, 100).kernel("k", 10, 50, 100);  // runs [50, 150): across the boundary
    const Analysis a = analysed(b);
    ASSERT_EQ(a.steps.size(), 2u);
    EXPECT_DOUBLE_EQ(slice(a.steps[0].gpus[0], GpuSlice::other_kernel), 50);
    EXPECT_DOUBLE_EQ(slice(a.steps[1].gpus[0], GpuSlice::other_kernel), 50);
    EXPECT_EQ(a.steps[0].gpus[0].kernels, 1u);
    EXPECT_EQ(a.steps[1].gpus[0].kernels, 0u);
    EXPECT_DOUBLE_EQ(a.mean_gpu(0).us[static_cast<std::size_t>(GpuSlice::other_kernel)], 50);
    EXPECT_DOUBLE_EQ(a.step_us(), 200);
    // The step drawn as lanes: the host, and GPU0's stream 7 with the kernel's part in that step.
    ASSERT_EQ(a.timeline.lanes.size(), 2u);
    EXPECT_EQ(a.timeline.lanes[0].name, "host");
    EXPECT_EQ(a.timeline.lanes[1].name, "GPU0 stream 7");
    ASSERT_EQ(a.timeline.lanes[1].pieces.size(), 1u);
    const Piece& k = a.timeline.lanes[1].pieces[0];
    EXPECT_DOUBLE_EQ(k.end - k.start, 50) << "clipped to the step drawn";
}

TEST(StepBreakdown, TheHostsPhasesOfAStep) {
    TraceBuilder b;
    b.step(3, 0, 1000)
        .op(kLoader, 10, 200, 1, "user_annotation")
        .op("aten::stack", 150, 40)  // the collate, inside the loader
        .op("aten::to", 220, 20)
        .op("aten::_to_copy", 222, 16)
        .op("aten::linear", 250, 100)
        .op("aten::addmm", 255, 90)
        .op("aten::relu", 360, 40)
        .op("autograd::engine::evaluate_function: AddmmBackward0", 420, 180, 2)
        .op("autograd::engine::evaluate_function: ReluBackward0", 610, 90, 2)
        .op("Optimizer.step#SGD.step", 720, 80, 1, "user_annotation")
        .op("aten::add_", 730, 60)
        .op("aten::item", 815, 45)
        .op("aten::_local_scalar_dense", 816, 43);
    b.runtime("cudaStreamSynchronize", 820, 30);
    const Analysis a = analysed(b);
    ASSERT_EQ(a.steps.size(), 1u);
    const HostStep& h = a.steps[0].host;
    EXPECT_DOUBLE_EQ(phase(h, HostPhase::data), 200);
    EXPECT_DOUBLE_EQ(phase(h, HostPhase::to_device), 20);
    EXPECT_DOUBLE_EQ(phase(h, HostPhase::forward), 150) << "from aten::linear to aten::relu's end";
    EXPECT_DOUBLE_EQ(phase(h, HostPhase::backward), 280) << "first to last autograd function, on its own thread";
    EXPECT_DOUBLE_EQ(phase(h, HostPhase::optimizer), 80);
    EXPECT_DOUBLE_EQ(phase(h, HostPhase::sync), 30);
    EXPECT_DOUBLE_EQ(sum(h.us), 1000);
    EXPECT_EQ(a.loader, Analysis::Loader::in_process);
    // Operators by self time: the linear's own time is what addmm did not take.
    const auto linear =
        std::find_if(a.ops.begin(), a.ops.end(), [](const TopOp& o) { return o.name == "aten::linear"; });
    ASSERT_NE(linear, a.ops.end());
    EXPECT_DOUBLE_EQ(linear->self_us, 10);
    EXPECT_DOUBLE_EQ(linear->total_us, 100);
}

TEST(StepBreakdown, ASyncIsFoundAtItsLineWithTheGpuIdleAfterIt) {
    TraceBuilder b;
    for (int s = 0; s < 2; ++s) {
        const double o = s * 1000.0;
        // The kernel runs until 670: the sync (630 to 680) blocks the host 40 us of it, then the GPU
        // idles 40 us until the next kernel at 710.
        b.step(s, o, 1000).kernel("ampere_sgemm_128x64_nn", o + 10, o + 20, 650);
        b.python("train.py(40): main", o + 590, 120)
            .python("train.py(42): train_step", o + 600, 100)
            .python("<built-in method item of Tensor object at 0x7f>", o + 605, 90)
            .op("aten::item", o + 610, 80)
            .op("aten::_local_scalar_dense", o + 612, 76);
        b.runtime("cudaMemcpyAsync", o + 615, 5);
        b.runtime("cudaStreamSynchronize", o + 630, 50);
        b.kernel("ampere_sgemm_128x64_nn", o + 700, o + 710, 190);
    }
    const Analysis a = analysed(b);
    EXPECT_TRUE(a.has_stacks);
    ASSERT_EQ(a.syncs.size(), 1u);
    const SyncSite& s = a.syncs[0];
    EXPECT_EQ(s.call, "cudaStreamSynchronize");
    EXPECT_EQ(s.op, "aten::item") << "the operator the user called, not its inner one";
    EXPECT_EQ(s.where, "train.py(42): train_step") << "the innermost frame of the user's code";
    EXPECT_EQ(s.count, 2u);
    EXPECT_EQ(s.steps, 2u);
    EXPECT_DOUBLE_EQ(s.host_us, 100);
    EXPECT_DOUBLE_EQ(s.gpu_idle_us, 2 * 40) << "idle from the drain to the next kernel";
    for (const Step& st : a.steps) EXPECT_DOUBLE_EQ(st.gpus[0].idle_sync_us, 40);
}

TEST(StepBreakdown, WithoutStepMarksTheWholeTraceIsOneStep) {
    TraceBuilder b;
    b.op("aten::mm", 100, 50).kernel("k", 110, 120, 30);
    const Analysis a = analysed(b);
    EXPECT_FALSE(a.has_steps);
    ASSERT_EQ(a.steps.size(), 1u);
    EXPECT_EQ(a.steps[0].number, -1);
    EXPECT_DOUBLE_EQ(a.steps[0].start_us, 100);
    EXPECT_DOUBLE_EQ(a.steps[0].dur_us, 50);
    EXPECT_DOUBLE_EQ(phase(a.steps[0].host, HostPhase::forward), 50) << "the busiest thread stands for the steps'";
}

TEST(StepBreakdown, ACallStackArgumentGivesTheLineOfAScalarReadInACpuTrace) {
    TraceBuilder b;
    b.step(1, 0, 100)
        .op("aten::item", 10, 5, 1, "cpu_op",
            R"("Call stack": "<built-in method item of Tensor object at 0x1>;torch/nn/x.py(3): f;train.py(7): main")")
        .op("aten::_local_scalar_dense", 11, 3);
    const Analysis a = analysed(b);
    EXPECT_FALSE(a.has_gpu);
    ASSERT_EQ(a.syncs.size(), 1u);
    EXPECT_EQ(a.syncs[0].call, "") << "a scalar read, not a call: no GPU here to wait for";
    EXPECT_EQ(a.syncs[0].op, "aten::item");
    EXPECT_EQ(a.syncs[0].where, "train.py(7): main");
}

TEST(StepBreakdown, UserFramesAreTheUsersCode) {
    EXPECT_TRUE(is_user_frame("train.py(42): step"));
    EXPECT_TRUE(is_user_frame("/home/me/proj/model.py(9): forward"));
    EXPECT_FALSE(is_user_frame("torch/nn/modules/module.py(1501): _call_impl"));
    EXPECT_FALSE(is_user_frame("/usr/lib/python3/dist-packages/torch/_tensor.py(1): backward"));
    EXPECT_FALSE(is_user_frame("/venv/lib/python3.11/site-packages/transformers/x.py(3): f"));
    EXPECT_FALSE(is_user_frame("<built-in method item of Tensor object at 0x7f>"));
    EXPECT_FALSE(is_user_frame("nn.Module: Linear_0"));
    EXPECT_FALSE(is_user_frame("<frozen runpy>(88): _run_code"));
    EXPECT_FALSE(is_user_frame("no line here"));
    EXPECT_FALSE(is_user_frame("train.py(x): f"));
    EXPECT_TRUE(is_user_frame("<string>(18): train_step")) << "python -c";
    EXPECT_FALSE(is_user_frame(""));
}

// The legacy profiler's whole microseconds put aten::_local_scalar_dense at its aten::item's end
// (as Debian's torch 1.13 wrote in one run of three); an aten::mul ending where the next op starts
// stays a sibling.
TEST(StepBreakdown, ALegacyCalleeStartingAtItsCallersEndIsItsChild) {
    std::string events;
    for (int s = 0; s < 3; ++s) {
        const int t0 = 1000 * s;
        auto at = [&](const char* name, int ts, int dur) {
            events += std::string(events.empty() ? "" : ",") + R"({"name": ")" + name +
                      R"(", "ph": "X", "pid": "CPU functions", "tid": 1, "ts": )" + std::to_string(t0 + ts) +
                      ", \"dur\": " + std::to_string(dur) + R"(, "args": {}})";
        };
        at(("ProfilerStep#" + std::to_string(s + 1)).c_str(), 0, 900);
        at("aten::mul", 100, 5);
        at("aten::_local_scalar_dense", 105, 0);  // right after a mul: not the mul's
        at("aten::item", 300, 1);
        at("aten::_local_scalar_dense", 301, 0);
        at("aten::is_nonzero", 500, 2);
        at("aten::item", 502, 1);
        at("aten::_local_scalar_dense", 503, 0);
    }
    const baton::Result<Trace> t = parse_trace("[" + events + "]");
    ASSERT_TRUE(t.ok()) << t.error().message;
    const Analysis a = analyse(*t);
    ASSERT_TRUE(a.legacy);
    std::map<std::string, std::size_t> counts;
    for (const SyncSite& s : a.syncs) counts[s.op] += s.count;
    const std::map<std::string, std::size_t> expected{
        {"aten::_local_scalar_dense", 3}, {"aten::item", 3}, {"aten::is_nonzero", 3}};
    EXPECT_EQ(counts, expected);
}

// Debian's PyTorch records these (the legacy profiler: CPU only, no categories); "Call stack" is
// added from the profiler's own events as baton's hook does for such a build.
TEST(StepBreakdown, ARealCpuTraceOfASlowDatasetAndAnItemPerStep) {
    baton::test::TempDir d;
    const std::string path = d.path() + "/trace.json";
    const baton::Result<baton::ProgramOutput> rec = baton::run_program(
        {"/usr/bin/python3", "-c",
         "import json, sys, time, torch\n"
         "from torch.profiler import profile, ProfilerActivity, schedule\n"
         "class Slow(torch.utils.data.Dataset):\n"
         "    def __len__(self): return 1000\n"
         "    def __getitem__(self, i): time.sleep(0.002); return torch.randn(64)\n"
         "m = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))\n"
         "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
         "def on_ready(p):\n"
         "    p.export_chrome_trace(sys.argv[1])\n"
         "    st = {(e.name, e.time_range.start): ';'.join(e.stack) for e in p.events() if e.stack}\n"
         "    d = json.load(open(sys.argv[1]))\n"
         "    for ev in d:\n"
         "        s = st.get((ev['name'], ev['ts']))\n"
         "        if s: ev['args']['Call stack'] = s\n"
         "    json.dump(d, open(sys.argv[1], 'w'))\n"
         "def train_step(x):\n"
         "    loss = m(x).sum(); loss.backward(); opt.step(); opt.zero_grad()\n"
         "    return loss.item()\n"
         "with profile(activities=[ProfilerActivity.CPU], with_stack=True,\n"
         "             schedule=schedule(wait=1, warmup=1, active=3), on_trace_ready=on_ready) as p:\n"
         "    for i, x in enumerate(torch.utils.data.DataLoader(Slow(), batch_size=8)):\n"
         "        train_step(x)\n"
         "        p.step()\n"
         "        if i == 5: break\n",
         path},
        "", 120);
    ASSERT_TRUE(rec.ok());
    ASSERT_EQ(rec->exit_status, 0) << rec->err;
    baton::Result<Trace> t = read_trace_file(path);
    ASSERT_TRUE(t.ok()) << t.error().message;
    const Analysis a = analyse(*t);
    EXPECT_TRUE(a.legacy);
    EXPECT_FALSE(a.has_gpu);
    ASSERT_EQ(a.steps.size(), 3u);
    const HostStep h = a.mean_host();
    const double step = a.step_us() / 3;
    EXPECT_GT(step, 8 * 2000) << "8 samples of 2 ms each a step";
    EXPECT_GT(phase(h, HostPhase::data) / step, 0.7) << "the slow Dataset is most of the step";
    EXPECT_GT(phase(h, HostPhase::backward), 0);
    EXPECT_GT(phase(h, HostPhase::forward), 0);
    EXPECT_GT(phase(h, HostPhase::optimizer), 0);
    EXPECT_NEAR(sum(h.us), step, 1);
    EXPECT_EQ(a.loader, Analysis::Loader::in_process);
    ASSERT_EQ(a.syncs.size(), 1u);
    EXPECT_EQ(a.syncs[0].op, "aten::item");
    EXPECT_EQ(a.syncs[0].count, 3u);
    // (Debian's torch 1.13 on Python 3.11 gives the frame's lines a few off: the function is what is sure.)
    EXPECT_NE(a.syncs[0].where.find("): train_step"), std::string::npos) << a.syncs[0].where;
    bool addmm = false;
    for (const TopOp& o : a.ops) addmm = addmm || o.name == "aten::addmm";
    EXPECT_TRUE(addmm);
}

// A GEMM kernel whose name does not say its precision (cuBLASLt's nvjet_*) takes its operator's
// input type (record_shapes' "Input type"), tied by External id.
TEST(StepBreakdown, AGemmsPrecisionFromItsOperatorsInputType) {
    const char* json = R"({"traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
       "args": {"External id": 3, "Input type": ["c10::BFloat16", "c10::BFloat16"], "Input Dims": [[8, 8], [8, 8]]}},
      {"ph": "X", "cat": "kernel", "name": "nvjet_tst_128x192_64x5_2x1_v_bz_coopA_TNT", "pid": 0, "tid": 7,
       "ts": 40, "dur": 100, "args": {"device": 0, "External id": 3}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 200, "dur": 20,
       "args": {"External id": 4, "Input type": ["float", "float"]}},
      {"ph": "X", "cat": "kernel", "name": "nvjet_tst_64x8_64x16_4x1_v_bz_TNN", "pid": 0, "tid": 7,
       "ts": 240, "dur": 50, "args": {"device": 0, "External id": 4}}]})";
    baton::Result<Trace> t = parse_trace(json);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->names[t->events[1].input_type], "c10::BFloat16") << "the first input's type";
    const Analysis a = analyse(*t);
    ASSERT_EQ(a.kernels.size(), 2u);
    EXPECT_EQ(a.kernels[0].precision, GemmPrecision::bf16);
    EXPECT_EQ(a.kernels[1].precision, GemmPrecision::fp32_or_tf32) << "float: TF32 or not, the name does not say";
    EXPECT_DOUBLE_EQ(a.gemm_precision_us[static_cast<std::size_t>(GemmPrecision::bf16)], 100);
    EXPECT_DOUBLE_EQ(a.gemm_precision_us[static_cast<std::size_t>(GemmPrecision::fp32_or_tf32)], 50);
    EXPECT_DOUBLE_EQ(a.mean_gpu(0).fp32_gemm_us, 0) << "fp32_matmul counts only what the name proves";
}
