// The hook's capture read back: PyTorch's _snapshot() layout (segments, blocks, states, frames,
// device traces) with the hook's own keys; hostile captures give one error naming the place.
#include "gpu_memory/allocator_capture.hpp"

#include <gtest/gtest.h>

#include "capture_builder.hpp"

using namespace baton::gpu_memory;
using namespace baton::gpu_memory::testing;
using nlohmann::json;

TEST(AllocatorCapture, ReadsThePyTorchLayoutAndTheHooksKeys) {
    CaptureBuilder b;
    b.segment(0x7f0000000000, json::array({json::array({2 * kMiB, "active_allocated", forward_stack()}),
                                           json::array({6 * kMiB, "inactive", nullptr}),
                                           json::array({4 * kMiB, "active_awaiting_free", forward_stack()})}))
        .tensor("parameters", 0x7f0000000000, 2 * kMiB)
        .set("history", true)
        .set("requested_bytes", 8 * kMiB)
        .set("stack", forward_stack())
        .set("message", "CUDA out of memory. Tried to allocate 8.00 MiB.");
    json snap = json::parse(b.json());
    snap["snapshot"]["device_traces"] = json::array(
        {json::array({{{"action", "alloc"}, {"addr", 1}, {"size", 512}, {"stream", 0}, {"frames", forward_stack()}},
                      {{"action", "oom"}, {"size", 8 * kMiB}, {"device_free", 3 * kMiB}, {"frames", json::array()}},
                      {{"action", "annotate"}, {"addr", 1}}})});
    const auto c = parse_oom_capture(snap.dump());
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->pid, 4242u);
    EXPECT_EQ(c->torch_version, "2.4.1");
    EXPECT_EQ(c->step, 12);
    EXPECT_EQ(c->batch_size, 64);
    EXPECT_EQ(c->phase, StepPhase::forward);
    EXPECT_TRUE(c->history);
    EXPECT_EQ(c->requested_bytes, 8 * kMiB);
    EXPECT_EQ(c->stats.allocated, 2 * kMiB);
    EXPECT_EQ(c->stats.reserved, 12 * kMiB);
    ASSERT_EQ(c->segments.size(), 1u);
    const Segment& s = c->segments[0];
    ASSERT_EQ(s.blocks.size(), 3u);
    EXPECT_EQ(s.blocks[1].address, 0x7f0000000000 + 2 * kMiB);
    EXPECT_EQ(s.blocks[1].state, BlockState::inactive);
    EXPECT_EQ(s.blocks[2].state, BlockState::active_awaiting_free);
    // The same stack is kept once; the failure's stack too.
    ASSERT_GE(s.blocks[0].stack, 0);
    EXPECT_EQ(s.blocks[0].stack, s.blocks[2].stack);
    EXPECT_EQ(c->stacks[static_cast<std::size_t>(s.blocks[0].stack)][2].filename, "/home/ana/train.py");
    ASSERT_EQ(c->failure_stack.size(), 4u);
    EXPECT_EQ(c->failure_stack[2].line, 42);
    ASSERT_EQ(c->parameters.size(), 1u);
    ASSERT_EQ(c->traces.size(), 3u);
    EXPECT_EQ(c->traces[1].action, TraceAction::oom);
    EXPECT_EQ(c->traces[1].device_free, 3 * kMiB);
    EXPECT_EQ(c->traces[2].action, TraceAction::other);  // an action of a newer PyTorch
}

TEST(AllocatorCapture, OlderLayoutsWithoutBlockAddressesAndOtherDevices) {
    CaptureBuilder b;
    b.segment(0x1000000,
              json::array({json::array({kMiB, "active_allocated", nullptr}),
                           json::array({3 * kMiB, "active_pending_free", nullptr})}),
              /*with_addresses=*/false);
    json j = json::parse(b.json());
    json other = j["snapshot"]["segments"][0];
    other["device"] = 1;
    j["snapshot"]["segments"].push_back(other);
    const auto c = parse_oom_capture(j.dump());
    ASSERT_TRUE(c.ok()) << c.error().message;
    ASSERT_EQ(c->segments.size(), 1u);  // device 1's segment is another GPU's
    EXPECT_EQ(c->segments[0].blocks[1].address, 0x1000000 + kMiB);
    EXPECT_EQ(c->segments[0].blocks[1].state, BlockState::active_awaiting_free);
}

TEST(AllocatorCapture, HostileCapturesGiveOneErrorNamingThePlace) {
    CaptureBuilder b;
    b.segment(0x1000, json::array({json::array({kMiB, "active_allocated", forward_stack()})}));
    const std::string good = b.json();
    ASSERT_TRUE(parse_oom_capture(good).ok());
    // Cut anywhere: never a crash, always one line.
    for (std::size_t n = 0; n < good.size(); n += 7) {
        const auto c = parse_oom_capture(std::string_view(good).substr(0, n));
        ASSERT_FALSE(c.ok()) << n;
        EXPECT_EQ(c.error().message.find('\n'), std::string::npos);
    }
    const auto error_of = [](const json& j) {
        const auto c = parse_oom_capture(j.dump());
        return c.ok() ? std::string("ok") : c.error().message;
    };
    json j = json::parse(good);
    EXPECT_NE(error_of(json::array()).find("expected a JSON object"), std::string::npos);
    EXPECT_NE(error_of(json{{"segments", json::array()}}).find("not a baton OOM capture"), std::string::npos);
    json v = j;
    v["baton_oom_capture"] = 2;
    EXPECT_NE(error_of(v).find("only version 1"), std::string::npos);
    v = j;
    v["snapshot"]["segments"][0]["blocks"][0]["size"] = -5;
    EXPECT_NE(error_of(v).find("snapshot.segments[0].blocks[0].size: expected a non-negative integer"),
              std::string::npos)
        << error_of(v);
    v = j;
    v["snapshot"]["segments"][0]["blocks"][0]["state"] = "haunted";
    EXPECT_NE(error_of(v).find("blocks[0].state"), std::string::npos);
    v = j;
    v["snapshot"]["segments"][0]["blocks"][0]["frames"][1] = "not a frame";
    EXPECT_NE(error_of(v).find("frames[1]: expected a frame object"), std::string::npos);
    v = j;
    v["tensors"]["parameters"] = json::array({json::array({1})});
    EXPECT_NE(error_of(v).find("tensors.parameters[0]: expected [address, bytes]"), std::string::npos);
    v = j;
    v["t"] = 1.7e24;  // found by fuzz_oom_capture: refused before it is converted
    EXPECT_NE(error_of(v).find("t: expected a number of unix ms up to the year 9999"), std::string::npos);
    v = j;
    v["snapshot"] = "pickle";
    EXPECT_NE(error_of(v).find("snapshot: expected an object"), std::string::npos);
    // Larger than baton reads: refused before parsing.
    const auto huge = parse_oom_capture(std::string(kMaxCaptureBytes + 1, ' '));
    ASSERT_FALSE(huge.ok());
    EXPECT_NE(huge.error().message.find("more than"), std::string::npos);
    // Deep stacks are cut, long names too.
    v = j;
    json deep = json::array();
    for (int i = 0; i < 1000; ++i) deep.push_back(frame(std::string(10000, 'x'), i, "f"));
    v["stack"] = deep;
    const auto c = parse_oom_capture(v.dump());
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->failure_stack.size(), 64u);
    EXPECT_EQ(c->failure_stack[0].filename.size(), 4096u);
}

TEST(AllocatorCapture, ReadsAFileAndSaysWhyNot) {
    const auto missing = read_oom_capture("/nonexistent/oom.json");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("/nonexistent/oom.json"), std::string::npos);
    const auto dir = read_oom_capture("/");
    ASSERT_FALSE(dir.ok());
    EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos);
}
