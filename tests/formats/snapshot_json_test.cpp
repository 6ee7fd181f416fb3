// The JSON schema: every key the snapshot writes is documented in docs/snapshot-schema.md,
// every key documented as always present is there, and types match the documentation.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <unistd.h>

#include "sample/sampler.hpp"
#include "formats/snapshot_json.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::formats;
using nlohmann::json;

namespace {

struct DocField {
    std::string type;  // integer, number, string, boolean, array, object, "object or null", ...
    bool always = false;
};

// Rows of the schema tables: | `path` | type | always/optional | meaning |
std::map<std::string, DocField> documented_fields() {
    std::ifstream in(baton::test::source_dir() + "/docs/snapshot-schema.md");
    std::map<std::string, DocField> out;
    std::regex row(R"(^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|\s*(always|optional)\s*\|)");
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, row)) out[m[1]] = {m[2], m[3] == "always"};
    return out;
}

bool type_matches(const json& v, const std::string& doc) {
    if (v.is_null()) return doc.find("null") != std::string::npos;
    if (v.is_boolean()) return doc.find("boolean") != std::string::npos;
    if (v.is_number_integer() || v.is_number_unsigned())
        return doc.find("integer") != std::string::npos || doc.find("number") != std::string::npos;
    if (v.is_number_float()) return doc.find("number") != std::string::npos;
    if (v.is_string()) return doc.find("string") != std::string::npos;
    if (v.is_array()) return doc.find("array") != std::string::npos;
    if (v.is_object()) return doc.find("object") != std::string::npos;
    return false;
}

void collect(const json& v, const std::string& path, std::map<std::string, std::vector<const json*>>& seen) {
    // Array elements ("disks[]") are described by their keys' rows, not a row of their own.
    if (!path.empty() && !path.ends_with("[]")) seen[path].push_back(&v);
    if (v.is_object()) {
        for (auto it = v.begin(); it != v.end(); ++it)
            collect(it.value(), path.empty() ? it.key() : path + "." + it.key(), seen);
    } else if (v.is_array()) {
        for (const json& e : v)
            if (e.is_object() || e.is_array()) collect(e, path + "[]", seen);
    }
}

// A snapshot with every part filled: the real /proc (whose counters move, so rates exist)
// or a fixture tree (exact, with a container pid), and eight fake GPUs.
json full_snapshot(bool fixture = true, const std::string& scenario = "eight-busy",
                   const std::function<void(Snapshot&)>& edit = {}) {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    test::use_scenario(scenario);
    SamplerOptions o;
    if (fixture) {
        o.proc_root = d.path() + "/proc";
        o.sys_root = d.path() + "/sys";
        o.shm_path = d.path();
    }
    o.nvml.library_path = test::fake_nvml_library(scenario);
    o.priming_seconds = 0.1;  // long enough for /proc/stat's jiffies to move
    Sampler s(o);
    Snapshot snap;
    s.take(snap);
    if (edit) edit(snap);
    std::string out;
    append_snapshot_json(snap, out);
    return json::parse(out);
}

}  // namespace

TEST(SnapshotJson, EveryKeyIsDocumentedWithItsType) {
    auto doc = documented_fields();
    ASSERT_GT(doc.size(), 50u) << "docs/snapshot-schema.md tables not found";
    std::map<std::string, std::vector<const json*>> seen;
    json fixture = full_snapshot(true), real = full_snapshot(false);
    collect(fixture, "", seen);
    collect(real, "", seen);
    // MIG instances and the panel's fields of another GPU kind (fan, remapping pending).
    json mig = full_snapshot(true, "mig"), fan = full_snapshot(true, "throttled");
    collect(mig, "", seen);
    collect(fan, "", seen);
    // XIDs, as the event watch counts them (it starts after the first reading: set here).
    const json xid = full_snapshot(true, "xid", [](Snapshot& x) { x.gpus[0].xid_errors = {{{79, 1, 1764400000000}}}; });
    collect(xid, "", seen);
    for (const char* key : {"gpus[].mig_instances", "gpus[].mig_instances[].pids", "gpus[].processes[].gpu_instance_id",
                            "gpus[].fan_speed_percent", "gpus[].nvlink_rx_bytes_per_second", "gpus[].remapping_pending",
                            "gpus[].remapped_rows_corrected", "gpus[].xid_errors[].last_time"})
        EXPECT_TRUE(seen.count(key)) << key << " never written";
    for (const auto& [path, values] : seen) {
        auto it = doc.find(path);
        ASSERT_NE(it, doc.end()) << "undocumented key " << path;
        for (const json* v : values) EXPECT_TRUE(type_matches(*v, it->second.type)) << path << " is " << v->type_name();
    }
}

TEST(SnapshotJson, EveryAlwaysKeyIsPresent) {
    std::map<std::string, std::vector<const json*>> seen;
    collect(full_snapshot(), "", seen);
    const json mig = full_snapshot(true, "mig");  // the keys inside mig_instances[]
    const json xid = full_snapshot(true, "xid", [](Snapshot& x) { x.gpus[0].xid_errors = {{{13, 2, 1764400000000}}}; });
    collect(mig, "", seen);
    collect(xid, "", seen);                  // and inside xid_errors[]
    const json real = full_snapshot(false);  // this machine's mounts: filesystems[]
    collect(real, "", seen);
    for (const auto& [path, field] : documented_fields())
        if (field.always) {
            EXPECT_TRUE(seen.count(path)) << "missing key " << path;
        }
}

TEST(SnapshotJson, IssueRequiredKeysHaveTheRightShape) {
    json j = full_snapshot(false);
    EXPECT_TRUE(j["time"].is_string());
    EXPECT_FALSE(j["host"]["hostname"].get<std::string>().empty());
    EXPECT_EQ(j["host"]["cpu_count"], sysconf(_SC_NPROCESSORS_ONLN));
    EXPECT_TRUE(j["cpu"]["utilization_percent"].is_number());
    EXPECT_TRUE(j["cpu"]["iowait_percent"].is_number());
    EXPECT_EQ(j["cpu"]["load_average"].size(), 3u);
    EXPECT_EQ(j["cpu"]["cores"].size(), j["host"]["cpu_count"].get<std::size_t>());
    EXPECT_TRUE(j["memory"]["total_bytes"].is_number_unsigned());
    EXPECT_TRUE(j["swap"]["in_bytes_per_second"].is_number());
    EXPECT_TRUE(j["pressure"].is_object());
    EXPECT_TRUE(j["disks"].is_array());
    EXPECT_TRUE(j["networks"].is_array());
    EXPECT_EQ(j["gpu_status"], "ok");
    ASSERT_EQ(j["gpus"].size(), 8u);
    const json& g = j["gpus"][0];
    for (const char* k : {"index", "uuid", "name", "utilization_percent", "memory_used_bytes", "memory_total_bytes",
                          "temperature_celsius", "power_watts", "throttle_reasons", "processes"})
        EXPECT_TRUE(g.contains(k)) << k;
    ASSERT_FALSE(j["processes"].empty());
    for (const char* k : {"pid", "ppid", "user", "command", "cpu_percent", "rss_bytes"})
        EXPECT_TRUE(j["processes"][0].contains(k)) << k;
}

TEST(SnapshotJson, AbsentMeansAbsentNotZero) {
    Snapshot s;  // nothing measured
    std::string out;
    append_snapshot_json(s, out);
    json j = json::parse(out);
    EXPECT_FALSE(j["cpu"].contains("utilization_percent"));
    EXPECT_FALSE(j["swap"].contains("in_bytes_per_second"));
    EXPECT_TRUE(j["pressure"].is_null());
    GpuInfo g;
    g.name = "x";
    s.gpus.push_back(g);
    out.clear();
    append_snapshot_json(s, out);
    j = json::parse(out);
    EXPECT_FALSE(j["gpus"][0].contains("temperature_celsius"));
    EXPECT_FALSE(j["gpus"][0].contains("power_watts"));
}

TEST(SnapshotJson, EncoderCacheMatchesOneShotOutput) {
    // A stream encoder must write exactly what the one-shot view writes, also when a
    // process changes identity under the same pid (exec, pid reuse) or goes away.
    Snapshot s;
    ProcessInfo a;
    a.pid = 10;
    a.name = "python3";
    a.command = "python3 train.py \"quoted\"";
    a.user = "alice";
    a.start_time_ms = 1000;
    ProcessInfo b = a;
    b.pid = 11;
    b.name = "worker";
    s.processes = {a, b};
    SnapshotJsonEncoder enc;
    auto same = [&](const Snapshot& snap) {
        std::string one, streamed;
        append_snapshot_json(snap, one);
        enc.append(snap, streamed);
        EXPECT_EQ(one, streamed);
    };
    same(s);
    same(s);
    s.processes[0].command = "torchrun --nproc-per-node 8";  // exec, same name
    same(s);
    s.processes[0].start_time_ms = 5000;  // pid reused
    s.processes[0].user = "bob";
    same(s);
    s.processes[0].container_pid = 3;
    same(s);
    s.processes.pop_back();  // gone
    same(s);
    s.processes.push_back(b);  // back under the same pid, same identity
    same(s);
}
