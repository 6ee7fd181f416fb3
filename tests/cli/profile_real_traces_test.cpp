// `baton profile` on traces recorded by others on real hardware (tests/fixtures/profile/hta/README.md
// says where each comes from): an AMD MI250 under ROCm, an A100 with syncs, an A100 under CUPTI's range
// profiler, a V100, Meta's MTIA. Each checks what the trace holds is read and judged for that hardware,
// through the real binary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

using baton::test::baton_binary;
using baton::test::run;
using baton::test::TempDir;

namespace {

std::string fixture(const char* name) {
    return baton::test::fixture_dir() + "/profile/hta/" + name;
}

struct Profiled {
    std::string text;
    nlohmann::json json;
};

Profiled profile(const std::string& path) {
    Profiled p;
    auto t = run({baton_binary(), "--config", "/dev/null", "profile", path});
    EXPECT_TRUE(t.exit_code == 0 || t.exit_code == 1) << t.err;
    p.text = t.out;
    auto j = run({baton_binary(), "--config", "/dev/null", "profile", "--json", "--top", "100", path});
    EXPECT_TRUE(j.exit_code == 0 || j.exit_code == 1) << j.err;
    p.json = nlohmann::json::parse(j.out);
    return p;
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

std::vector<std::string> rules_of(const nlohmann::json& doc) {
    std::vector<std::string> ids;
    for (const auto& f : doc["findings"]) ids.push_back(f["rule"]);
    return ids;
}

}  // namespace

// ROCm: HIP's synchronising calls are syncs, Tensile's Cijk_* kernels are GEMMs, the device is AMD's
// (its deviceProperties' 9.0 is a gfx version, not Hopper's compute capability).
TEST(ProfileRealTraces, AnMi250UnderRocm) {
    const Profiled p = profile(fixture("mi250_rocm6.2.json.gz"));
    EXPECT_TRUE(p.json["rocm"]) << p.text;
    ASSERT_FALSE(p.json["device_properties"].empty());
    EXPECT_EQ(p.json["device_properties"][0]["arch"], "amd");
    EXPECT_FALSE(p.json["device_properties"][0].contains("compute_capability"));
    std::size_t tensile = 0;
    for (const auto& k : p.json["kernels"])
        if (k["name"].get<std::string>().rfind("Cijk_", 0) == 0) {
            ++tensile;
            EXPECT_EQ(k["class"], "gemm") << k["name"];
        }
    EXPECT_GE(tensile, 2u);
    bool hip_sync = false;
    for (const auto& s : p.json["syncs"])
        if (s["call"].get<std::string>().rfind("hip", 0) == 0) hip_sync = true;
    EXPECT_TRUE(hip_sync) << "hipMemcpyWithStream / hipDeviceSynchronize wait for the GPU\n" << p.json["syncs"];
    EXPECT_GT(p.json["mean"]["host"]["sync"].get<double>(), 0) << p.text;
    EXPECT_TRUE(has(p.text, "sync (waits for GPU)")) << p.text;
}

// CUPTI's range profiler writes its kernels as cuda_profiler_range: they are GPU activity (not "no
// GPU activity"), said to be replayed, and no GPU finding is judged on their replayed times.
TEST(ProfileRealTraces, KernelsOfCuptisRangeProfiler) {
    const Profiled p = profile(fixture("a100_cupti_range_profiler.json.gz"));
    EXPECT_FALSE(has(p.text, "No GPU activity")) << p.text;
    EXPECT_TRUE(p.json["has_gpu"]);
    EXPECT_EQ(p.json["range_profiler_kernels"], 77);
    EXPECT_TRUE(has(p.text, "77 kernels come from CUPTI's range profiler (cuda_profiler_range)")) << p.text;
    EXPECT_FALSE(p.json["kernels"].empty());
    for (const std::string& rule : rules_of(p.json))
        EXPECT_EQ(rule, "data_in_step") << "a GPU finding on replayed kernels";
}

// A V100 (compute capability 7.0) spending its GEMM time in sgemm: the advice is fp16 with a
// GradScaler; TF32 and bf16, which Volta lacks, are not offered.
TEST(ProfileRealTraces, AVoltaIsToldWhatItsTensorCoresTake) {
    const Profiled p = profile(fixture("v100_one_step_gpu.json.gz"));
    EXPECT_EQ(p.json["device_properties"][0]["compute_capability"], "7.0");
    EXPECT_EQ(p.json["device_properties"][0]["arch"], "volta");
    const nlohmann::json* matmul = nullptr;
    for (const auto& f : p.json["findings"])
        if (f["rule"] == "fp32_matmul") matmul = &f;
    ASSERT_NE(matmul, nullptr) << p.text;
    const std::string fix = (*matmul)["recommendation"], snippet = (*matmul)["snippet"];
    EXPECT_TRUE(has(fix, "fp16")) << fix;
    EXPECT_TRUE(has(snippet, "GradScaler")) << snippet;
    EXPECT_TRUE(has(snippet, "torch.float16")) << snippet;
    for (const char* absent : {"allow_tf32", "bfloat16", "set_float32_matmul_precision"})
        EXPECT_FALSE(has(snippet, absent)) << absent << " on Volta:\n" << snippet;
    EXPECT_TRUE(has((*matmul)["summary"].get<std::string>(), "Tesla V100-SXM2-32GB")) << (*matmul)["summary"];
}

// Meta's MTIA: its device activity is named, not called "no GPU activity".
TEST(ProfileRealTraces, AnMtiaTraceSaysWhatItHolds) {
    const Profiled p = profile(fixture("mtia_inference_slice.json.gz"));
    EXPECT_FALSE(has(p.text, "No GPU activity")) << p.text;
    EXPECT_TRUE(has(p.text,
                    "The trace holds MTIA device activity (315 mtia_ccp_events, 12 mtia_runtime events; "
                    "devices: ARTEMIS), which baton profile does not judge"))
        << p.text;
    ASSERT_EQ(p.json["other_devices"].size(), 1u);
    EXPECT_EQ(p.json["other_devices"][0]["kind"], "MTIA");
    EXPECT_EQ(p.json["other_devices"][0]["events"]["mtia_ccp_events"], 315);
}

// An A100 trace that recorded only the CPU says it listed GPUs but recorded none of their activity.
TEST(ProfileRealTraces, GpusListedButNotRecorded) {
    TempDir d;
    d.write("cpu.json", R"({"deviceProperties": [{"id": 0, "name": "NVIDIA A100-PG509-200", "computeMajor": 8,
        "computeMinor": 0}], "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
        "ts": 0, "dur": 10}]})");
    auto r = run({baton_binary(), "--config", "/dev/null", "profile", d.path() + "/cpu.json"});
    EXPECT_TRUE(has(r.out,
                    "No GPU activity in the trace, although it lists 1 device (NVIDIA A100-PG509-200): the "
                    "profiler ran without ProfilerActivity.CUDA"))
        << r.out;
}

// The legacy profiler records no stacks even with with_stack=True: the hint does not tell the user to
// set it.
TEST(ProfileRealTraces, TheLegacyProfilersMissingStacksAreNotBlamedOnWithStack) {
    TempDir d;
    d.write("legacy.json", R"([
        {"name": "ProfilerStep#1", "ph": "X", "ts": 0, "dur": 100, "tid": 1, "pid": "CPU functions", "args": {}},
        {"name": "aten::item", "ph": "X", "ts": 10, "dur": 20, "tid": 1, "pid": "CPU functions", "args": {}},
        {"name": "aten::_local_scalar_dense", "ph": "X", "ts": 11, "dur": 18, "tid": 1, "pid": "CPU functions",
         "args": {}}])");
    auto r = run({baton_binary(), "--config", "/dev/null", "profile", d.path() + "/legacy.json"});
    EXPECT_TRUE(has(r.out, "the legacy profiler records no Python stacks, even with with_stack=True")) << r.out;
    EXPECT_FALSE(has(r.out, "record with with_stack=True)")) << r.out;
}

// What is JSON but not a trace is refused in one line, exit 1: arrays of numbers or arrays, objects
// that are not events.
TEST(ProfileRealTraces, WhatIsNotATraceIsRefused) {
    TempDir d;
    const std::pair<const char*, const char*> cases[] = {
        {"[[1, 2], [3, 4]]", "its events array holds arrays, not event objects"},
        {"[1, 2, 3]", "its events array holds numbers, not event objects"},
        {R"({"traceEvents": [{"ph": "X", "name": "a"}, "b"]})", "its events array holds strings"},
        {R"([{"a": 1}, {"b": 2}])", "none of which is an event"},
    };
    for (const auto& [text, why] : cases) {
        d.write("x.json", text);
        auto r = run({baton_binary(), "--config", "/dev/null", "profile", d.path() + "/x.json"});
        EXPECT_EQ(r.exit_code, 1) << text;
        EXPECT_TRUE(has(r.err, "not a profiler trace")) << text << ": " << r.err;
        EXPECT_TRUE(has(r.err, why)) << text << ": " << r.err;
        EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
    }
}
