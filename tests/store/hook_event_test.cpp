// The hook's events as baton reads them: what the Python side sends, and hostile datagrams
// (anything this user runs can write to the socket).
#include <gtest/gtest.h>

#include "store/hook_event.hpp"

using namespace baton;
using namespace baton::store;

TEST(HookEvent, AStepAsThePythonHookSendsIt) {
    auto e = parse_hook_event(
        R"({"type":"step","rank":1,"step":41,"step_ms":22.71,"wait_ms":17.4,"samples":8,)"
        R"("data":{"cuda":{"allocated_bytes":1024},"scale":65536.0},"t":1764465600123.4,"pid":4242,"dropped":3})");
    ASSERT_TRUE(e.ok()) << e.error().message;
    EXPECT_EQ(e->type, "step");
    EXPECT_EQ(e->dropped, 3u);
    EXPECT_EQ(e->step.pid, 4242u);
    EXPECT_EQ(e->step.rank, 1);
    EXPECT_EQ(e->step.step, 41);
    EXPECT_DOUBLE_EQ(e->step.step_ms, 22.71);
    EXPECT_DOUBLE_EQ(e->step.wait_ms, 17.4);
    EXPECT_EQ(e->step.samples, 8);
    EXPECT_EQ(e->step.t_ms, 1764465600123);
    EXPECT_EQ(e->step.data, R"({"cuda":{"allocated_bytes":1024},"scale":65536.0})");
    // Optional parts absent; unknown keys ignored; another type is read without step fields.
    e = parse_hook_event(R"({"type":"step","rank":0,"step":0,"step_ms":5,"wait_ms":9,"t":1,"future":[1,2]})");
    ASSERT_TRUE(e.ok()) << e.error().message;
    EXPECT_FALSE(e->step.samples);
    EXPECT_EQ(e->step.data, "");
    EXPECT_DOUBLE_EQ(e->step.wait_ms, 5.0);  // capped at the step
    e = parse_hook_event(R"({"type":"hello","t":1})");
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->type, "hello");
}

TEST(HookEvent, AFindingFromCheck) {
    auto e = parse_hook_event(
        R"({"type":"finding","rule":"loader_num_workers_zero","severity":"warning","subject":"loader",)"
        R"x("summary":"the DataLoader loads every batch","recommendation":"Use num_workers=7","snippet":"DataLoader(...)",)x"
        R"("doc":"elsewhere","t":5000,"pid":9,"dropped":0})");
    ASSERT_TRUE(e.ok()) << e.error().message;
    ASSERT_TRUE(e->finding);
    EXPECT_EQ(e->finding->rule, "loader_num_workers_zero");
    EXPECT_EQ(e->finding->severity, diagnose::Severity::warning);
    EXPECT_EQ(e->finding->subject, "loader");
    EXPECT_EQ(e->finding->recommendation, "Use num_workers=7");
    EXPECT_EQ(e->finding->snippet, "DataLoader(...)");
    EXPECT_EQ(e->finding->doc, "docs/findings.md#loader_num_workers_zero");  // baton's own link, not the sender's
    EXPECT_EQ(e->step.t_ms, 5000);
    const std::string base = R"({"type":"finding","t":1,"subject":"s","summary":"x","recommendation":"y",)";
    EXPECT_NE(parse_hook_event(base + R"("rule":"Bad-Rule","severity":"info"})").error().message.find("lower-case id"),
              std::string::npos);
    EXPECT_NE(parse_hook_event(base + R"("rule":"r","severity":"fatal"})").error().message.find("'severity'"),
              std::string::npos);
    EXPECT_NE(parse_hook_event(base + R"("rule":"","severity":"info"})").error().message.find("'rule'"),
              std::string::npos);
    EXPECT_FALSE(parse_hook_event(R"({"type":"finding","t":1,"rule":"r","severity":"info","subject":"s",)"
                                  R"("summary":")" +
                                  std::string(5000, 'x') + R"(","recommendation":"y"})")
                     .ok());
}

TEST(HookEvent, AProfileWindowsTrace) {
    auto e = parse_hook_event(
        R"({"type":"profile","path":"/run/x/profile/trace-9.json.gz","steps":5,"rank":0,"t":7,"pid":9})");
    ASSERT_TRUE(e.ok()) << e.error().message;
    EXPECT_EQ(e->type, "profile");
    EXPECT_EQ(e->path, "/run/x/profile/trace-9.json.gz");
    EXPECT_EQ(e->profile_steps, 5);
    EXPECT_EQ(e->step.rank, 0);
    EXPECT_EQ(e->step.pid, 9u);
    for (const char* bad : {R"({"type":"profile","t":1,"steps":5,"rank":0})",
                            R"({"type":"profile","t":1,"path":"relative.json.gz","steps":5,"rank":0})",
                            R"({"type":"profile","t":1,"path":7,"steps":5,"rank":0})",
                            R"({"type":"profile","t":1,"path":"/a","steps":-1,"rank":0})",
                            R"({"type":"profile","t":1,"path":"/a","steps":5})"})
        EXPECT_FALSE(parse_hook_event(bad).ok()) << bad;
    EXPECT_FALSE(
        parse_hook_event(R"({"type":"profile","t":1,"steps":5,"rank":0,"path":"/)" + std::string(5000, 'a') + R"("})")
            .ok());
}

TEST(HookEvent, AnOutOfMemoryCapture) {
    auto e = parse_hook_event(R"({"type":"oom","path":"/run/x/memory/oom-9.json","rank":3,"t":7,"pid":9})");
    ASSERT_TRUE(e.ok()) << e.error().message;
    EXPECT_EQ(e->type, "oom");
    EXPECT_EQ(e->path, "/run/x/memory/oom-9.json");
    EXPECT_EQ(e->step.rank, 3);
    for (const char* bad : {R"({"type":"oom","t":1,"rank":0})", R"({"type":"oom","t":1,"path":"oom.json","rank":0})",
                            R"({"type":"oom","t":1,"path":"/a"})"})
        EXPECT_FALSE(parse_hook_event(bad).ok()) << bad;
}

TEST(HookEvent, AStepsAllocatorFigures) {
    auto e = parse_hook_event(
        R"({"type":"step","t":1,"rank":0,"step":4,"step_ms":10,"wait_ms":1,"data":{"cuda":{"device":1,)"
        R"("allocated_bytes":100,"reserved_bytes":300,"active_bytes":120,"peak_allocated_bytes":250,)"
        R"("inactive_split_bytes":20,"num_ooms":0,"num_alloc_retries":2}}})");
    ASSERT_TRUE(e.ok()) << e.error().message;
    ASSERT_TRUE(e->cuda);
    EXPECT_EQ(e->cuda->device, 1u);
    EXPECT_EQ(e->cuda->allocated, 100u);
    EXPECT_EQ(e->cuda->reserved, 300u);
    EXPECT_EQ(e->cuda->peak_allocated, 250u);
    EXPECT_EQ(e->cuda->inactive_split, 20u);
    EXPECT_EQ(e->cuda->num_alloc_retries, 2u);
    // The stored data reads back the same; older hooks' figures (no peak since the last step) too.
    const auto back = parse_allocator_figures(e->step.data);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->active, 120u);
    EXPECT_TRUE(parse_allocator_figures(
        R"({"cuda":{"device":0,"allocated_bytes":1,"reserved_bytes":2,"peak_allocated_bytes":2,"fragmentation_bytes":1,"num_ooms":0}})"));
    // Figures that are not figures are none, and the step itself still counts.
    for (const char* data :
         {R"({"scale":2})", R"({"cuda":{"allocated_bytes":-1,"reserved_bytes":2}})", R"({"cuda":{"reserved_bytes":2}})",
          R"({"cuda":{"allocated_bytes":"1","reserved_bytes":2}})",
          R"({"cuda":{"device":5000,"allocated_bytes":1,"reserved_bytes":2}})", R"({"cuda":[]})", "not json", ""})
        EXPECT_FALSE(parse_allocator_figures(data)) << data;
    auto odd = parse_hook_event(
        R"({"type":"step","t":1,"rank":0,"step":4,"step_ms":10,"wait_ms":1,"data":{"cuda":{"allocated_bytes":1.5}}})");
    ASSERT_TRUE(odd.ok());
    EXPECT_FALSE(odd->cuda);
}

TEST(HookEvent, HostileDatagramsAreRefusedWithTheKey) {
    const std::pair<std::string, std::string> cases[] = {
        {"", "not JSON"},
        {"{", "not JSON"},
        {"[1,2]", "not a JSON object"},
        {R"({"t":1})", "'type' must be a string"},
        {R"({"type":7,"t":1})", "'type' must be a string"},
        {R"({"type":"step"})", "'t' must be a number"},
        {R"({"type":"step","t":-5})", "'t' must be a number from 0 to 253402300799999"},
        // Out of range before any conversion: 1e19 ms would become INT64_MIN.
        {R"({"type":"step","t":1e19,"rank":0,"step":0,"step_ms":1,"wait_ms":1})", "'t' must be a number from 0 to"},
        {R"({"type":"step","t":1,"rank":0,"step":0,"step_ms":1e300,"wait_ms":1})",
         "'step_ms' must be a number from 0 to 1000000000"},
        {R"({"type":"step","t":1,"rank":0,"step":0,"step_ms":"fast","wait_ms":1})", "'step_ms' must be a number"},
        {R"({"type":"step","t":1,"rank":0,"step":0,"step_ms":1e999,"wait_ms":1})", "not JSON"},
        {R"({"type":"step","t":1,"rank":-1,"step":0,"step_ms":1,"wait_ms":1})", "'rank' must be an integer"},
        {R"({"type":"step","t":1,"rank":0,"step":1.5,"step_ms":1,"wait_ms":1})", "'step' must be an integer"},
        {R"({"type":"step","t":1,"rank":0,"step":0,"step_ms":1,"wait_ms":-1})", "'wait_ms' must be a number from 0 to"},
        {R"({"type":"step","t":1,"rank":0,"step":0,"step_ms":1,"wait_ms":1,"samples":-3})", "'samples' must be"},
        {R"({"type":"step","t":1,"rank":0,"step":0,"step_ms":1,"wait_ms":1,"data":[1]})", "'data' must be an object"},
        {R"({"type":"step","t":1,"pid":99999999999})", "'pid' must be an integer"},
    };
    for (const auto& [text, error] : cases) {
        auto e = parse_hook_event(text);
        ASSERT_FALSE(e.ok()) << text;
        EXPECT_NE(e.error().message.find(error), std::string::npos) << text << " -> " << e.error().message;
    }
    // Too long: refused unread; deeply nested: parsed or refused, never a crash.
    std::string huge = R"({"type":"step","pad":")" + std::string(kMaxHookEventBytes, 'x') + "\"}";
    auto e = parse_hook_event(huge);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.error().message.find("at most 16384"), std::string::npos) << e.error().message;
    std::string deep = std::string(8000, '[') + std::string(8000, ']');
    EXPECT_FALSE(parse_hook_event(deep).ok());
    EXPECT_FALSE(parse_hook_event(std::string("{\"type\":\"step\",\0\"t\":1}", 22)).ok());
}
