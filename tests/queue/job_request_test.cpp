// The job request: sizes, dependencies and GPU lists as users write them (and hostile ones), the
// request's JSON round trip, and what submit refuses with its reason.
#include <gtest/gtest.h>

#include "queue/job_request.hpp"
#include "test_support.hpp"

using namespace baton::queue;

namespace {

using baton::test::GiB;

Pool two_gpus() {
    Pool p;
    for (unsigned i = 0; i < 2; ++i) {
        PoolGpu g;
        g.index = i;
        g.uuid = i == 0 ? "GPU-8f3a0000-aaaa-bbbb-cccc-000000000000" : "GPU-8f3a1111-aaaa-bbbb-cccc-111111111111";
        g.memory_total_bytes = 80 * GiB;
        p.gpus.push_back(g);
    }
    p.cpus = {0, 1, 2, 3};
    p.memory_bytes = 64 * GiB;
    return p;
}

// check_request's refusal, "" when it takes the request; a refusal is always invalid_argument.
std::string refused(const JobRequest& r, const Pool& p) {
    const Status s = check_request(r, p);
    if (s.ok()) return "";
    EXPECT_TRUE(s.is(baton::ErrorCode::invalid_argument)) << s.error().message;
    return s.error().message;
}

}  // namespace

TEST(QueueRequest, SizesAsUsersWriteThem) {
    EXPECT_EQ(parse_size("20G"), 20 * GiB);
    EXPECT_EQ(parse_size("20GiB"), 20 * GiB);
    EXPECT_EQ(parse_size("20gb"), 20 * GiB);
    EXPECT_EQ(parse_size(" 1.5T "), 1536 * GiB);
    EXPECT_EQ(parse_size("512m"), 512ull * 1024 * 1024);
    EXPECT_EQ(parse_size("4096"), 4096u);
    EXPECT_EQ(parse_size("4096B"), 4096u);
    for (const char* bad : {"", "G", "-1G", "0", "0.0G", "1..5G", "20X", "20Gx", "20 G B", "1e3", "nan",
                            "99999999999999999999999999", "16384P", ".", "0.0000001"})
        EXPECT_FALSE(parse_size(bad).has_value()) << bad;
}

TEST(QueueRequest, DependenciesAndGpuLists) {
    auto a = parse_after("12,14:ok");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->jobs, (std::vector<std::int64_t>{12, 14}));
    EXPECT_TRUE(a->ok);
    a = parse_after("3");
    ASSERT_TRUE(a.ok());
    EXPECT_FALSE(a->ok);
    for (const char* bad : {"", ":ok", "3,", "x", "-3", "3:any", "1234567890123456789012"}) {
        auto r = parse_after(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().message.rfind("--after takes job ids", 0), 0u) << r.error().message;
    }

    const Pool p = two_gpus();
    auto g = resolve_gpus("1,0,1", p);
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ(*g, (std::vector<std::string>{p.gpus[1].uuid, p.gpus[0].uuid}));
    g = resolve_gpus("GPU-8f3a1111", p);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(*g, std::vector<std::string>{p.gpus[1].uuid});
    g = resolve_gpus("GPU-8f3a", p);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().message,
              "--gpu 'GPU-8f3a' names more than one GPU (its GPUs: 0, 1; give an index as "
              "nvidia-smi numbers it, or a UUID)");
    g = resolve_gpus("7", p);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().message,
              "--gpu '7' is not a GPU this queue may use (its GPUs: 0, 1; give an index as "
              "nvidia-smi numbers it, or a UUID)");
    for (const char* bad : {"", ",", "GPU", "99999999", "0,,1"}) EXPECT_FALSE(resolve_gpus(bad, p).ok()) << bad;
}

// --delay and --at as users write them; anything else refused with the forms.
TEST(QueueRequest, DelayedStartsAsUsersWriteThem) {
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    const std::int64_t now = 1765000000000;  // 2025-12-06 05:46:40 UTC
    EXPECT_EQ(*parse_delay("30m", now), now + 1800000);
    EXPECT_EQ(*parse_delay("90s", now), now + 90000);
    EXPECT_EQ(*parse_delay("0", now), now);
    EXPECT_EQ(*parse_at("06:00", now), 1765000800000) << "later today";
    EXPECT_EQ(*parse_at("05:00:30", now), 1765083630000) << "already past: tomorrow";
    EXPECT_EQ(*parse_at("2025-12-24 18:30", now), 1766601000000);
    EXPECT_EQ(*parse_at("2025-12-24T18:30:15", now), 1766601015000);
    for (const char* bad : {"", "25:00", "12:60", "noon", "2025-02-31 10:00", "2025-12-24", "12:00pm", "1:2:3:4"}) {
        baton::Result<std::int64_t> r = parse_at(bad, now);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().message.find("--at "), std::string::npos) << r.error().message;
    }
    for (const char* bad : {"", "soon", "-5m", "400d"}) EXPECT_FALSE(parse_delay(bad, now).ok()) << bad;
    JobRequest r;
    r.not_before_ms = 1766601000000;
    baton::Result<JobRequest> back = parse_request_json(request_json(r));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->not_before_ms, r.not_before_ms);
    EXPECT_FALSE(parse_request_json("{\"not_before_ms\": \"soon\"}").ok());
    EXPECT_FALSE(parse_request_json("{}")->not_before_ms.has_value());
}

TEST(QueueRequest, JsonRoundTripAndHostileJson) {
    JobRequest r;
    r.want.gpus = 2;
    r.want.gpu_uuids = {"GPU-x"};
    r.want.gpu_memory_bytes = 20 * GiB;
    r.want.share = true;
    r.want.cpus = 8;
    r.want.memory_bytes = 64 * GiB;
    r.retries = 3;
    r.on_oom = OnOom::retry;
    auto back = parse_request_json(request_json(r));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->want.gpus, 2u);
    EXPECT_EQ(back->want.gpu_uuids, std::vector<std::string>{"GPU-x"});
    EXPECT_EQ(back->want.gpu_memory_bytes, 20 * GiB);
    EXPECT_TRUE(back->want.share);
    EXPECT_EQ(back->want.cpus, 8u);
    EXPECT_EQ(back->want.memory_bytes, 64 * GiB);
    EXPECT_EQ(back->retries, 3u);
    EXPECT_EQ(back->on_oom, OnOom::retry);
    EXPECT_FALSE(back->slurm);

    auto unknown = parse_request_json(R"({"gpus":1,"from_a_newer_baton":{"x":1}})");
    ASSERT_TRUE(unknown.ok());
    EXPECT_EQ(unknown->want.gpus, 1u);
    for (const char* bad : {"", "[]", "{", R"({"gpus":-1})", R"({"gpus":"2"})", R"({"gpus":1e9})", R"({"share":1})",
                            R"({"gpu_uuids":"GPU-x"})", R"({"gpu_uuids":[1]})", R"({"on_oom":"maybe"})",
                            R"({"memory_bytes":-5})", R"({"gpu_memory_bytes":1.5})"})
        EXPECT_FALSE(parse_request_json(bad).ok()) << bad;
}

TEST(QueueRequest, SubmitRefusesWhatCanNeverRunHere) {
    const Pool p = two_gpus();
    JobRequest r;
    r.want.gpus = 99;
    EXPECT_EQ(refused(r, p), "asks for 99 GPU(s), this machine has 2");
    r.want.gpus = 1;
    EXPECT_EQ(refused(r, p), "");
    r.want.share = true;
    EXPECT_EQ(refused(r, p),
              "--share needs the memory each GPU must keep for the job: --gpu-mem 20G, or --gpu-mem auto with --name");
    r.gpu_memory_auto = true;
    EXPECT_EQ(refused(r, p), "");
    r = JobRequest{};
    r.want.gpu_memory_bytes = GiB;
    EXPECT_EQ(refused(r, p), "--gpu-mem needs --gpus or --gpu");
    r = JobRequest{};
    r.want.cpus = 5;
    EXPECT_EQ(refused(r, p), "asks for 5 CPUs, this queue has 4");
    Pool unknown = p;
    unknown.gpus_known = false;
    r = JobRequest{};
    r.want.gpus = 99;
    EXPECT_EQ(refused(r, unknown), "") << "with the GPUs unreadable it cannot tell: the job waits";
}
