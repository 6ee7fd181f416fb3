// What `baton bench` decides before it measures: each bench's options from the flags (with the
// one-line error of a bad flag), the quick suite's sizes, the disk's need from a flag or a
// recorded run, and a finished bench's record. None of it measures anything.
#include <gtest/gtest.h>

#include "measure/bench_need.hpp"
#include "measure/bench_record.hpp"
#include "measure/bench_suite.hpp"
#include "test_support.hpp"
#include "store/history_bench.hpp"
#include "store/history_runs.hpp"

using namespace baton;
using namespace baton::measure;
using baton::test::TempDir;

namespace {

BenchSettings settings() {
    BenchSettings s;
    s.sys_root = "/fixture/sys";
    s.nvml_library = "/fake/libnvidia-ml.so.1";
    s.ok_share = 0.8;
    s.memory_ok_share = 0.5;
    s.scaling_alarm = 0.6;
    return s;
}

}  // namespace

TEST(BenchSuite, SettingsComeFromTheConfig) {
    Config c;
    c.sample.sys_root = "/other/sys";
    c.bench.ok_share = 0.9;
    c.bench.memory_ok_share = 0.4;
    c.bench.scaling_alarm = 0.75;
    const BenchSettings s = bench_settings(c, SamplerOptions{});
    EXPECT_EQ(s.sys_root, "/other/sys");
    EXPECT_EQ(s.ok_share, 0.9);
    EXPECT_EQ(s.memory_ok_share, 0.4);
    EXPECT_EQ(s.scaling_alarm, 0.75);
    // Host memory is judged with its own share.
    BenchRequest r;
    r.threads = 3;
    const MemoryBenchOptions m = plan_memory(r, s);
    EXPECT_EQ(m.ok_share, 0.4);
    EXPECT_EQ(m.max_threads, 3u);
}

TEST(BenchSuite, SizesAreCheckedPerBench) {
    BenchRequest r;
    r.max_size = "256M";
    Result<H2dOptions> h = plan_h2d(r, settings());
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->max_size, std::uint64_t{256} << 20);
    EXPECT_EQ(h->bytes_per_point, std::uint64_t{256} << 20);  // the default, under 16 x 256M
    EXPECT_EQ(h->ok_share, 0.8);
    r.max_size = "4K";
    h = plan_h2d(r, settings());
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->bytes_per_point, 16u * 4096);  // a small maximum stays quick
    for (const char* bad : {"3K", "65G", "lots", "-1M"}) {
        r.max_size = bad;
        h = plan_h2d(r, settings());
        ASSERT_FALSE(h.ok()) << bad;
        EXPECT_TRUE(h.error().is(ErrorCode::invalid_argument));
        EXPECT_EQ(h.error().message, std::string("bench h2d --max-size ") + bad + ": expected 4K to 64G, e.g. 256M");
    }
    // allreduce goes down to 8 bytes, as nccl-tests -b 8.
    r.max_size = "8";
    Result<AllreduceOptions> ar = plan_allreduce(r, settings());
    ASSERT_TRUE(ar.ok());
    EXPECT_EQ(ar->max_bytes, 8u);
    EXPECT_EQ(ar->nvml_library, "/fake/libnvidia-ml.so.1");
    r.max_size = "7";
    EXPECT_TRUE(plan_allreduce(r, settings()).error().is(ErrorCode::invalid_argument));
    r.max_size = "";
    r.op = "all_to_all";
    EXPECT_NE(plan_allreduce(r, settings()).error().message.find("--op all_to_all"), std::string::npos);
    r.op = "reduce_scatter";
    EXPECT_EQ(plan_allreduce(r, settings())->op, Collective::reduce_scatter);
    // disk: 1 MiB at least.
    r.size = "1M";
    r.path = "/data";
    Result<DiskBenchOptions> d = plan_disk(r, settings());
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->size, 1u << 20);
    EXPECT_EQ(d->path, "/data");
    r.size = "1023K";
    EXPECT_EQ(plan_disk(r, settings()).error().message, "bench disk --size 1023K: expected 1M or more, e.g. 4G");
}

TEST(BenchSuite, NetNeedsASideAndAnAddress) {
    BenchRequest r;
    EXPECT_TRUE(net_needs_a_side(r));
    r.listen_given = true;  // --listen alone: the default address
    EXPECT_FALSE(net_needs_a_side(r));
    Result<ListenAddress> l = plan_net_listen(r);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->port, kNetDefaultPort);
    r.listen = "127.0.0.1:99999";
    EXPECT_TRUE(plan_net_listen(r).error().is(ErrorCode::invalid_argument));
    EXPECT_EQ(plan_net_listen(r).error().message.rfind("bench net --listen: ", 0), 0u);
    BenchRequest c;
    c.connect = "peer:7000";
    c.streams = 8;
    Result<NetClientOptions> o = plan_net_client(c, settings());
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(o->host, "peer");
    EXPECT_EQ(o->port, 7000);
    EXPECT_EQ(o->streams, 8u);
    c.connect = "peer:0";
    EXPECT_TRUE(plan_net_client(c, settings()).error().is(ErrorCode::invalid_argument));
}

TEST(BenchSuite, ScalingPlan) {
    BenchRequest r;
    r.sizes = "1,2,4";
    r.train_seconds = 40;
    r.no_gpus = true;
    r.python = "/opt/py/bin/python3";
    Result<ScalingOptions> o = plan_scaling(r, settings(), {"--", "train.py", "--lr", "1"}, "/usr/bin/baton",
                                            "/state/scaling", 1764586200000, 4242);  // 2025-12-01T10:50:00Z
    ASSERT_TRUE(o.ok()) << o.error().message;
    EXPECT_EQ(o->sizes, (std::vector<int>{1, 2, 4}));
    EXPECT_EQ(o->command, (std::vector<std::string>{"train.py", "--lr", "1"}));
    EXPECT_EQ(o->warmup_seconds, 10);  // a quarter of --seconds
    EXPECT_EQ(o->alarm, 0.6);
    EXPECT_EQ(o->baton, "/usr/bin/baton");
    EXPECT_EQ(o->launch_args, (std::vector<std::string>{"--no-gpus"}));  // --python only when typed
    EXPECT_EQ(o->work_dir, "/state/scaling/2025-12-01T105000-4242");
    r.python_given = true;
    r.module = true;
    r.work_dir = "/mine";
    o = plan_scaling(r, settings(), {"pkg.train"}, "/b", "/state", 0, 1);
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(o->launch_args, (std::vector<std::string>{"--no-gpus", "--module", "--python", "/opt/py/bin/python3"}));
    EXPECT_EQ(o->work_dir, "/mine");

    auto error_of = [&](const BenchRequest& req, std::vector<std::string> command) {
        Result<ScalingOptions> bad = plan_scaling(req, settings(), std::move(command), "/b", "/s", 0, 1);
        EXPECT_FALSE(bad.ok());
        EXPECT_TRUE(bad.error().is(ErrorCode::invalid_argument));
        return bad.error().message;
    };
    EXPECT_EQ(error_of(r, {"--"}), "bench scaling: no training given (baton bench scaling --gpus 1,2 -- train.py)");
    BenchRequest sizes = r;
    sizes.sizes = "2,1";
    EXPECT_EQ(error_of(sizes, {"t.py"}).rfind("bench scaling ", 0), 0u);
    BenchRequest warm = r;
    warm.warmup_seconds = 40;
    EXPECT_EQ(error_of(warm, {"t.py"}), "bench scaling: --warmup must be shorter than --seconds");
    BenchRequest re = r;
    re.metric_regex = "samples/s: ([0-9.]+";
    EXPECT_EQ(error_of(re, {"t.py"}).rfind("bench scaling --metric-regex: not a regular expression: ", 0), 0u);
}

TEST(BenchSuite, TheQuickSuiteIsSmall) {
    const QuickSuite q = plan_quick_suite(settings(), "/scratch", 12);
    EXPECT_EQ(q.memory.repeats, 3);
    EXPECT_EQ(q.memory.array_bytes, std::size_t{256} << 20);
    EXPECT_EQ(q.memory.ok_share, 0.5);
    EXPECT_EQ(q.disk.path, "/scratch");
    EXPECT_EQ(q.disk.size, std::uint64_t{512} << 20);
    EXPECT_EQ(q.disk.seconds_per_test, 3);
    EXPECT_EQ(q.h2d.min_size, 1u << 20);
    EXPECT_EQ(q.h2d.max_size, 256u << 20);
    EXPECT_EQ(q.h2d.deadline_seconds, 12);
    EXPECT_EQ(q.allreduce.max_bytes, 256u << 20);
    EXPECT_EQ(q.allreduce.iters, 10);
    EXPECT_EQ(q.allreduce.warmup, 2);
    EXPECT_EQ(q.allreduce.sys_root, "/fixture/sys");
    const BenchReport net = skipped_report("net", "needs a peer");
    EXPECT_TRUE(net.skipped);
    ASSERT_EQ(net.links.size(), 1u);
    EXPECT_EQ(net.links[0].verdict, "skipped");
    EXPECT_EQ(net.links[0].detail, "needs a peer");
}

TEST(BenchNeed, FromTheFlagOrARecordedRun) {
    Result<DiskNeed> n = need_from_flag("2GB/s");
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(n->bytes_per_second, 2e9);
    EXPECT_EQ(n->source, "--need 2GB/s");
    EXPECT_TRUE(need_from_flag("fast").error().is(ErrorCode::invalid_argument));

    std::vector<RunSample> samples(20);
    for (int i = 0; i < 20; ++i) samples[i].disk_read_bytes_per_second = (i + 1) * 100e6;  // 100 .. 2000 MB/s
    samples[3].disk_read_bytes_per_second.reset();                                         // not recorded: left out
    n = need_from_samples(12, samples);
    ASSERT_TRUE(n.ok());
    EXPECT_NEAR(*n->bytes_per_second, 1.9e9, 0.1e9);
    EXPECT_EQ(n->source, "run 12: the p95 of its disk reads");
    EXPECT_EQ(need_from_samples(3, {}).error().message,
              "run 3 recorded no disk reads (no samples, or recorded by an older baton)");
    std::vector<RunSample> idle(5);
    for (RunSample& s : idle) s.disk_read_bytes_per_second = 0;
    EXPECT_EQ(need_from_samples(4, idle).error().message, "run 4 read nothing from disk: nothing to measure against");

    // Neither flag: no need, and the history is not opened.
    bool opened = false;
    auto open = [&]() -> Result<History> {
        opened = true;
        return make_error(ErrorCode::not_found, "no history");
    };
    n = disk_need("", "", open);
    ASSERT_TRUE(n.ok());
    EXPECT_FALSE(n->bytes_per_second);
    EXPECT_FALSE(opened);
    EXPECT_EQ(disk_need("", "abc", open).error().message, "no run 'abc' (baton runs lists the runs)");
    EXPECT_FALSE(opened);
    EXPECT_EQ(disk_need("", "7", open).error().message, "no history");
    EXPECT_TRUE(opened);
}

TEST(BenchRecord, ReportsBecomeOneRunWithItsLinks) {
    BenchReport mem;
    mem.bench = "memory";
    mem.links.push_back({"memory triad", 18e9, 25e9, "DIMMs", std::nullopt, "ok", ""});
    const BenchReport net = skipped_report("net", "needs a peer");
    TempDir d;
    const std::string db = d.path() + "/baton.db";
    Result<std::int64_t> id = record_bench(db, {"", "", "/work", "box", 1000, 5000, "TEXT"}, {mem, net});
    ASSERT_TRUE(id.ok()) << id.error().message;
    Result<History> h = History::open(db);
    ASSERT_TRUE(h.ok());
    Result<RunRecord> run = h->run_reads().run(*id);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->name, "bench");
    EXPECT_EQ(run->command, "baton bench");
    EXPECT_EQ(run->summary, "TEXT");
    Result<std::vector<BenchLinkRecord>> links = h->bench_table().bench_links(*id);
    ASSERT_TRUE(links.ok());
    ASSERT_EQ(links->size(), 2u);
    EXPECT_EQ((*links)[0].bench, "memory");
    EXPECT_EQ((*links)[1].verdict, "skipped");
    // One bench: named after it unless --name.
    id = record_bench(db, {"h2d", "", "/work", "box", 1000, 5000, ""}, {mem});
    EXPECT_EQ(h->run_reads().run(*id)->name, "bench h2d");
    EXPECT_EQ(h->run_reads().run(*id)->command, "baton bench h2d");
    id = record_bench(db, {"h2d", "before the driver update", "/work", "box", 1000, 5000, ""}, {mem});
    EXPECT_EQ(h->run_reads().run(*id)->name, "before the driver update");
    // A database that cannot be created (its directory would be under a file) is an error.
    d.write("file", "x");
    EXPECT_FALSE(record_bench(d.path() + "/file/x.db", {}, {mem}).ok());
}
