// A job's use as JSON: baton's layout read back as written, hostile answers refused with the
// field's name, and Princeton jobstats' summary and JS1 AdminComment as jobstats reads them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/base64.hpp"
#include "core/gzip.hpp"
#include "formats/job_usage_json.hpp"

using namespace baton;
using namespace baton::diagnose;
using nlohmann::json;

namespace {

constexpr std::uint64_t kUseGiB = 1ull << 30;

JobUse two_gpu_job() {
    JobUse j;
    j.label = "slurm:4242";
    j.kind = "slurm";
    j.id = "4242";
    j.name = "train";
    j.user = "alice";
    j.account = "ml";
    j.partition = "gpu";
    j.time_limit_seconds = 86400;
    j.start_time_unix = 1764400000;
    j.ended = true;
    NodeUse n;
    n.host = "della-k1g1";
    n.first_unix_ms = 1764400001000;
    n.last_unix_ms = 1764403601000;
    n.samples = 3600;
    n.cpus = 12;
    n.node_cpus = 64;
    n.cpu_seconds = 57620.84;
    n.memory_allocated_bytes = 128 * kUseGiB;
    n.node_memory_bytes = 512 * kUseGiB;
    n.memory_peak_bytes = 79 * kUseGiB;
    GpuUse g0;
    g0.index = 0;
    g0.uuid = "GPU-aaaa";
    g0.minor_number = 1;
    g0.allocated = true;
    g0.utilization_percent = 98.64;
    g0.sm_activity_percent = 71.0;
    g0.memory_peak_bytes = 77 * kUseGiB;
    g0.memory_total_bytes = 80 * kUseGiB;
    GpuUse g1 = g0;
    g1.index = 1;
    g1.uuid = "GPU-bbbb";
    g1.minor_number = 3;
    g1.utilization_percent = 0;
    g1.sm_activity_percent.reset();
    g1.memory_peak_bytes = 0;
    n.gpus = {g0, g1};
    j.nodes = {n};
    j.findings = {{"gpu_idle_allocated", Severity::warning, "slurm:4242 (alice) has held GPU 1 idle", 1764400061000}};
    return j;
}

}  // namespace

TEST(JobUsageJson, ReadsBackWhatItWrites) {
    const JobUse j = two_gpu_job();
    const std::string text = formats::job_use_json(j, {"asked for 2 GPUs, used 1: request 1"});
    const json doc = json::parse(text);
    EXPECT_EQ(doc["job"]["state"], "ended");
    EXPECT_EQ(doc["job"]["runtime_seconds"], 3601.0);  // from Slurm's start to the last sample
    EXPECT_EQ(doc["notes"][0], "asked for 2 GPUs, used 1: request 1");
    EXPECT_EQ(doc["nodes"][0]["gpus"][0]["utilization_percent"], 98.6);
    Result<JobUse> back = formats::read_job_use(text);
    ASSERT_TRUE(back.ok()) << back.error().message;
    const JobUse& b = back.value();
    EXPECT_EQ(b.label, j.label);
    EXPECT_EQ(b.account, "ml");
    EXPECT_EQ(b.start_time_unix, j.start_time_unix);
    EXPECT_TRUE(b.ended);
    ASSERT_EQ(b.nodes.size(), 1u);
    EXPECT_EQ(b.nodes[0].cpus, 12u);
    EXPECT_EQ(b.nodes[0].memory_peak_bytes, 79 * kUseGiB);
    ASSERT_EQ(b.nodes[0].gpus.size(), 2u);
    EXPECT_EQ(b.nodes[0].gpus[1].minor_number, 3u);
    EXPECT_FALSE(b.nodes[0].gpus[1].sm_activity_percent.has_value());
    EXPECT_EQ(b.findings, j.findings);
}

TEST(JobUsageJson, HostileAnswersAreRefusedWithTheFieldsName) {
    const json good = json::parse(formats::job_use_json(two_gpu_job(), {}));
    auto error_of = [](const json& doc) {
        Result<JobUse> r = formats::read_job_use(doc.dump());
        return r.ok() ? std::string("accepted") : r.error().message;
    };
    EXPECT_EQ(formats::read_job_use("{not json").error().message, "not JSON");
    EXPECT_EQ(formats::read_job_use("[]").error().message, ": expected an object");
    json j = good;
    j["job"].erase("label");
    EXPECT_EQ(error_of(j), "job.label: missing");
    j = good;
    j["job"]["state"] = "zombie";
    EXPECT_EQ(error_of(j), "job.state: expected ended or running");
    j = good;
    j["nodes"][0]["cpu_seconds"] = -5;
    EXPECT_EQ(error_of(j), "nodes[0].cpu_seconds: expected a number >= 0");
    j = good;
    j["nodes"][0]["gpus"][1]["index"] = "one";
    EXPECT_EQ(error_of(j), "nodes[0].gpus[1].index: expected a whole number >= 0");
    j = good;
    j["nodes"][0]["cpus"] = 1e20;
    EXPECT_EQ(error_of(j), "nodes[0].cpus: expected a whole number >= 0");
    j = good;
    j["findings"][0]["severity"] = "fatal";
    EXPECT_EQ(error_of(j), "findings[0].severity: expected info, warning or critical");
    j = good;
    j["nodes"] = "many";
    EXPECT_EQ(error_of(j), "nodes: expected an array");
}

TEST(JobUsageJson, TheSummaryIsJobstatsLayoutKeyedByMinorNumber) {
    const json s = json::parse(formats::jobstats_summary(two_gpu_job()));
    const json expected = json::parse(R"({
        "gpus": 2,
        "nodes": {"della-k1g1": {"cpus": 12, "total_memory": 137438953472, "used_memory": 84825604096,
                                 "total_time": 57620.8,
                                 "gpu_total_memory": {"1": 85899345920, "3": 85899345920},
                                 "gpu_used_memory": {"1": 82678120448, "3": 0},
                                 "gpu_utilization": {"1": 98.6, "3": 0.0}}},
        "total_time": 3601})");
    EXPECT_EQ(s, expected) << s.dump(2);
    // No Slurm allocation said: the node's cores and memory stand in, as the whole node was the job's.
    JobUse j = two_gpu_job();
    j.nodes[0].cpus.reset();
    j.nodes[0].memory_allocated_bytes.reset();
    const json n = json::parse(formats::jobstats_summary(j))["nodes"]["della-k1g1"];
    EXPECT_EQ(n["cpus"], 64);
    EXPECT_EQ(n["total_memory"], 512 * kUseGiB);
}

TEST(JobUsageJson, Js1IsBase64OfGzippedSummaryAndDecodesBack) {
    const JobUse j = two_gpu_job();
    const std::string comment = formats::js1_admin_comment(j);
    ASSERT_EQ(comment.rfind("JS1:", 0), 0u);
    // As jobstats reads it: json.loads(gzip.decompress(base64.b64decode(data[4:]))).
    std::optional<std::string> packed = base64_decode(comment.substr(4));
    ASSERT_TRUE(packed.has_value());
    ASSERT_GE(packed->size(), 2u);
    EXPECT_EQ(static_cast<unsigned char>((*packed)[0]), 0x1f);  // gzip's magic
    EXPECT_EQ(static_cast<unsigned char>((*packed)[1]), 0x8b);
    EXPECT_EQ(gzip_decompress(*packed, 1 << 20), formats::jobstats_summary(j));
    Result<std::string> decoded = formats::decode_js1(comment);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(decoded.value(), formats::jobstats_summary(j));

    EXPECT_FALSE(formats::decode_js1("JS2:abcd").ok());
    EXPECT_EQ(formats::decode_js1("JS1:not base64!").error().message, "JS1 summary: not base64");
    EXPECT_EQ(formats::decode_js1("JS1:" + base64_encode("plain text")).error().message,
              "JS1 summary: not gzip (or over 16 MiB inflated)");
    EXPECT_EQ(formats::decode_js1("JS1:" + base64_encode(gzip_compress("{nope"))).error().message,
              "JS1 summary: not JSON");
    // 32 MiB of zeros gzip to about 32 KiB: refused, not inflated.
    EXPECT_FALSE(formats::decode_js1("JS1:" + base64_encode(gzip_compress(std::string(32u << 20, '0')))).ok());
}
