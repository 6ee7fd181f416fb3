// Reading snapshots back from JSON: a full round trip (write, read, write gives the same text)
// on the real /proc and on a fixture with eight fake GPUs; hostile lines give one clear error.
#include <gtest/gtest.h>

#include <sstream>

#include "sample/sampler.hpp"
#include "formats/snapshot_json.hpp"
#include "formats/snapshot_json_read.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::formats;

namespace {

std::string snapshot_text(bool fixture, const std::string& scenario = "throttled") {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    test::use_scenario(scenario);
    SamplerOptions o;
    if (fixture) {
        o.proc_root = d.path() + "/proc";
        o.sys_root = d.path() + "/sys";
    }
    o.nvml.library_path = test::fake_nvml_library(scenario);
    o.priming_seconds = 0.1;
    Sampler s(o);
    Snapshot snap;
    s.take(snap);
    std::string out;
    append_snapshot_json(snap, out);
    return out;
}

}  // namespace

TEST(SnapshotJsonRead, RoundTripIsExact) {
    for (bool fixture : {true, false}) {
        const std::string text = snapshot_text(fixture);
        Result<Snapshot> s = parse_snapshot_json(text);
        ASSERT_TRUE(s.ok()) << s.error().message;
        std::string again;
        append_snapshot_json(*s, again);
        EXPECT_EQ(again, text);
        EXPECT_FALSE(s->processes.empty());
        ASSERT_EQ(s->gpus.size(), 1u);
        EXPECT_EQ(s->gpus[0].processes.size(), 2u);
        if (!fixture) continue;
        // The fixture's trainer is Slurm job 4242, named from its task's environment.
        ASSERT_EQ(s->jobs.size(), 1u);
        EXPECT_EQ(s->jobs[0].label, "slurm:4242");
        EXPECT_EQ(s->jobs[0].name, "resnet");
        EXPECT_EQ(s->jobs[0].pids, (std::vector<std::uint32_t>{100, 101, 102}));
        EXPECT_EQ(s->processes[2].job.id, "4242");  // from the cgroup read back
    }
}

TEST(SnapshotJsonRead, MigInstancesAndNvlinkRoundTrip) {
    const std::string text = snapshot_text(true, "mig");
    Result<Snapshot> s = parse_snapshot_json(text);
    ASSERT_TRUE(s.ok()) << s.error().message;
    std::string again;
    append_snapshot_json(*s, again);
    EXPECT_EQ(again, text);
    ASSERT_EQ(s->gpus.size(), 2u);
    ASSERT_EQ(s->gpus[0].mig_instances.size(), 4u);
    EXPECT_EQ(s->gpus[0].mig_instances[1].pids, std::vector<std::uint32_t>{52200});
    EXPECT_EQ(s->gpus[0].processes.at(1).gpu_instance_id, 3u);
    EXPECT_EQ(s->gpus[1].nvlink_links_active, 4u);
    // A MIG instance that is not an object, or pids that are not pids, is a clear error.
    std::string bad = text;
    const std::size_t at = bad.find("\"pids\":[52100]");
    ASSERT_NE(at, std::string::npos);
    bad.replace(at, 15, "\"pids\":[-1]");
    EXPECT_FALSE(parse_snapshot_json(bad).ok());
}

TEST(SnapshotJsonRead, XidCountsRoundTrip) {
    Result<Snapshot> s = parse_snapshot_json(snapshot_text(true, "xid"));
    ASSERT_TRUE(s.ok()) << s.error().message;
    s->gpus[0].xid_errors = {{{13, 1, 1764400000123}, {31, 5000, 1764400001000}}};
    s->gpus[1].xid_errors = std::vector<XidCount>{};  // watched, none came
    s->gpus[2].xid_errors.reset();                    // not watched
    std::string text;
    append_snapshot_json(*s, text);
    EXPECT_NE(text.find("\"xid_errors\":[{\"xid\":13,\"count\":1,\"last_time\":\"2025-11-29T07:06:40.123Z\"}"),
              std::string::npos)
        << text;
    Result<Snapshot> back = parse_snapshot_json(text);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->gpus[0].xid_errors, s->gpus[0].xid_errors);
    EXPECT_EQ(back->gpus[1].xid_errors, std::vector<XidCount>{});
    EXPECT_FALSE(back->gpus[2].xid_errors.has_value());
    std::string again;
    append_snapshot_json(*back, again);
    EXPECT_EQ(again, text);
    // Hostile: a count that is not one, a time that is not one.
    std::string bad = text;
    bad.replace(bad.find("\"count\":1,"), 10, "\"count\":-1,");
    EXPECT_EQ(parse_snapshot_json(bad).error().message, "'gpus[0].xid_errors[0].count' must be a non-negative integer");
    bad = text;
    bad.replace(bad.find("\"last_time\":\"2025"), 17, "\"last_time\":\"x");
    EXPECT_FALSE(parse_snapshot_json(bad).ok());
}

TEST(SnapshotJsonRead, HostileLinesAreOneLineErrors) {
    const std::string good = snapshot_text(true);
    auto error_of = [](const std::string& text) {
        Result<Snapshot> s = parse_snapshot_json(text);
        EXPECT_FALSE(s.ok()) << text.substr(0, 80);
        return s.ok() ? std::string() : s.error().message;
    };
    EXPECT_EQ(error_of(""), "not valid JSON");
    EXPECT_EQ(error_of("{\"time\":"), "not valid JSON");
    EXPECT_EQ(error_of("[1,2,3]"), "'(top)' must be an object");
    EXPECT_EQ(error_of("{}"), "'time' must be present");
    EXPECT_EQ(error_of(std::string(100000, '[') + std::string(100000, ']')), "'(top)' must be an object");
    auto replace = [&](const std::string& from, const std::string& to) {
        std::string t = good;
        const std::size_t at = t.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        return t.replace(at, from.size(), to);
    };
    EXPECT_EQ(error_of(replace("\"cpu_count\":", "\"cpu_count\":-")),
              "'host.cpu_count' must be a non-negative integer");
    // More CPUs than Linux has: the advice would say num_workers=4294967294.
    EXPECT_EQ(error_of(replace("\"cpu_count\":", "\"cpu_count\":4294967295,\"x\":")),
              "'host.cpu_count' must be an integer from 0 to 65536");
    EXPECT_EQ(error_of(replace("\"hostname\":\"", "\"hostname\":1,\"x\":\"")), "'host.hostname' must be a string");
    EXPECT_EQ(error_of(replace("\"index\":0", "\"index\":\"0\"")), "'gpus[0].index' must be a non-negative integer");
    EXPECT_EQ(error_of(replace("\"time\":\"", "\"time\":\"yesterday\",\"t\":\"")), "'time' must be an RFC 3339 time");
    EXPECT_EQ(error_of(replace("\"pid\":1,", "\"pid\":99999999999,")),
              "'processes[0].pid' must be an integer from 0 to 4294967295");
    // Names are read back into their enums; one the reader does not know is refused with the choices.
    EXPECT_EQ(error_of(replace("\"type\":\"compute\"", "\"type\":\"cuda\"")),
              "'gpus[0].processes[0].type' must be compute or graphics");
    EXPECT_EQ(error_of(replace("\"index\":0,", "\"index\":0,\"compute_mode\":\"shared\",")),
              "'gpus[0].compute_mode' must be default, exclusive_thread, prohibited or exclusive_process");
    EXPECT_EQ(error_of(replace("\"index\":0,", "\"index\":0,\"compute_mode\":3,")),
              "'gpus[0].compute_mode' must be a string");
    EXPECT_TRUE(parse_snapshot_json(replace("\"index\":0,", "\"index\":0,\"compute_mode\":\"prohibited\",")).ok());
    EXPECT_EQ(error_of(replace("\"jobs\":[{\"kind\":\"slurm\"", "\"jobs\":[{\"kind\":\"none\"")),
              "'jobs[0].kind' must be slurm, pod, container, service or user");
    EXPECT_EQ(error_of(replace("\"pids\":[100", "\"pids\":[-100")), "'jobs[0].pids' must be an array of pids");
    EXPECT_EQ(error_of(replace("\"label\":\"slurm:4242\"", "\"label\":4242")), "'jobs[0].label' must be a string");
    for (const std::string& e : {error_of("nul"), error_of(replace("\"state\":\"", "\"state\":\"xy"))})
        EXPECT_EQ(e.find('\n'), std::string::npos);
}

namespace {

std::string line_at(double monotonic, std::optional<double> uptime, bool with_monotonic = true) {
    Snapshot s;
    s.time_unix_ms = 1764586200000 + static_cast<std::int64_t>(monotonic * 1000);
    s.interval_seconds = 1;
    if (with_monotonic) s.monotonic_seconds = monotonic;
    s.host.uptime_seconds = uptime;
    std::string out;
    append_snapshot_json(s, out);
    return out + "\n";
}

Result<diagnose::Window> stream(const std::string& text) {
    std::istringstream in(text);
    return read_snapshot_stream(in, "rec.jsonl");
}

}  // namespace

TEST(SnapshotJsonRead, AStreamInMonotonicOrder) {
    // The wall clock may step back inside one recording; the monotonic clock orders it.
    Result<diagnose::Window> w = stream(line_at(10, 100) + "\n  \n" + line_at(11, 101) + line_at(12, 102));
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_EQ(w->size(), 3u);
    w = stream(line_at(10, 100) + line_at(9, 101));
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.error().message, "rec.jsonl:2: snapshots must be in time order");
    w = stream(line_at(10, 100) + line_at(11, 0, false));
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.error().message, "rec.jsonl:2: snapshots with and without monotonic_seconds: files put together");
    // An older recording: a monotonic clock made from the intervals; uptime going back is refused.
    w = stream(line_at(10, 100, false) + line_at(11, 101, false));
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_DOUBLE_EQ(*(*w)[1].monotonic_seconds - *(*w)[0].monotonic_seconds, 1.0);
    w = stream(line_at(10, 100, false) + line_at(11, 50, false));
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.error().message, "rec.jsonl:2: snapshots must be in time order");
    w = stream(line_at(10, 100) + "{\"not\": \"a snapshot\"}\n");
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.error().message.rfind("rec.jsonl:2: ", 0), 0u);
    w = stream("");
    ASSERT_TRUE(w.ok());
    EXPECT_TRUE(w->empty());
}

// gpu_state round-trips by name, an unknown name is refused, and a recording made before baton wrote
// it gets the state its gpu_status line says.
TEST(SnapshotJsonRead, TheGpuStateByNameOrFromAnOlderStatusLine) {
    Snapshot s;
    s.time_unix_ms = 1764586200000;
    s.gpu_state = GpuState::stale;
    s.gpu_status = "NVML call nvmlDeviceGetPowerUsage did not return within 2000 ms; GPU values are stale";
    std::string text;
    append_snapshot_json(s, text);
    ASSERT_NE(text.find("\"gpu_state\":\"stale\""), std::string::npos) << text;
    Result<Snapshot> back = parse_snapshot_json(text);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->gpu_state, GpuState::stale);
    std::string bad = text;
    bad.replace(bad.find("\"stale\""), 7, "\"gone\"");
    ASSERT_FALSE(parse_snapshot_json(bad).ok());
    EXPECT_EQ(parse_snapshot_json(bad).error().message.rfind("'gpu_state' must be ok, no_driver, ", 0), 0u)
        << parse_snapshot_json(bad).error().message;
    const std::pair<const char*, GpuState> older[] = {
        {"ok", GpuState::ok},
        {"no NVIDIA driver: libnvidia-ml.so.1: cannot open shared object file", GpuState::no_driver},
        {"no NVIDIA GPU found", GpuState::no_gpus},
        {"GPU sampling disabled", GpuState::disabled},
        {"NVML initialisation failed: Driver Not Loaded", GpuState::failed},
        {"GPU1: GPU is lost", GpuState::failing},
        {"NVML call nvmlDeviceGetCount_v2 did not return within 2000 ms; GPU values are stale", GpuState::stale},
        {"", GpuState::not_read},
    };
    for (const auto& [status, state] : older) {
        std::string old = text;
        old.erase(old.find("\"gpu_state\":\"stale\","), std::string("\"gpu_state\":\"stale\",").size());
        const std::size_t at = old.find("\"gpu_status\":\"") + 14;
        old.replace(at, old.find('"', at) - at, status);
        Result<Snapshot> read = parse_snapshot_json(old);
        ASSERT_TRUE(read.ok()) << read.error().message << "\n" << old;
        EXPECT_EQ(read->gpu_state, state) << status;
    }
}
