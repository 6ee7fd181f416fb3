// baton compare's views on made-up records: two benches matched link by link (a link in one bench
// only, a skipped one, the change), and two runs' figures and findings as text and JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "profile/trace_builder.hpp"
#include "report/compare_view.hpp"

using namespace baton;
using namespace baton::report;

namespace {

store::RunRecord bench_record(std::int64_t id) {
    store::RunRecord r;
    r.id = id;
    r.name = "bench";
    r.kind = store::RunKind::bench;
    r.state = store::RunState::finished;
    r.exit_status = 0;
    return r;
}

}  // namespace

TEST(CompareView, BenchesLinkByLink) {
    const std::vector<store::BenchLinkRecord> a = {
        {"h2d", "h2d gpu0 pinned", 20e9, 25e9, std::nullopt, "PCIe 4.0 x16", "ok", ""},
        {"net", "net", 0, std::nullopt, std::nullopt, "", "skipped", "needs a peer"},
        {"memory", "memory triad", 18e9, 25e9, std::nullopt, "DIMMs", "ok", ""}};
    const std::vector<store::BenchLinkRecord> b = {
        {"h2d", "h2d gpu0 pinned", 10e9, 25e9, std::nullopt, "PCIe 4.0 x16", "degraded", ""},
        {"scaling", "scaling 2 GPUs", 1800, 2000, std::nullopt, "", "ok", "", "samples/s"}};
    const std::vector<LinkPair> pairs = pair_links(a, b);
    ASSERT_EQ(pairs.size(), 4u);
    EXPECT_EQ(pairs[0].link, "h2d gpu0 pinned");
    EXPECT_TRUE(pairs[0].a && pairs[0].b);
    EXPECT_FALSE(pairs[2].b);  // memory: only in a
    EXPECT_FALSE(pairs[3].a);  // scaling: only in b
    const std::string t = compare_benches_text(bench_record(3), bench_record(9), a, b);
    EXPECT_NE(t.find("bench 3"), std::string::npos);
    EXPECT_NE(t.find("bench 9"), std::string::npos);
    EXPECT_NE(t.find("-50 %"), std::string::npos) << t;
    EXPECT_NE(t.find("degraded"), std::string::npos);
    EXPECT_NE(t.find("skipped"), std::string::npos);
    EXPECT_NE(t.find("1800 samples/s ok"), std::string::npos) << t;
    const nlohmann::json j = nlohmann::json::parse(compare_benches_json(bench_record(3), bench_record(9), a, b));
    ASSERT_EQ(j["runs"].size(), 2u);
    EXPECT_EQ(j["runs"][1]["id"], 9);
    ASSERT_EQ(j["links"].size(), 4u);
    EXPECT_DOUBLE_EQ(j["links"][0]["change"].get<double>(), -0.5);
    EXPECT_TRUE(j["links"][2]["b"].is_null());
    EXPECT_TRUE(j["links"][3]["a"].is_null());
    EXPECT_FALSE(j["links"][1].contains("change"));  // skipped: measured 0, no change
    EXPECT_EQ(j["links"][3]["b"]["unit"], "samples/s");
}

TEST(CompareView, RunsFiguresAndFindings) {
    store::StoredRun a, b;
    a.run.id = 1;
    a.run.name = "resnet-before-the-fix";
    a.run.state = store::RunState::finished;
    a.run.exit_status = 0;
    a.run.start_ms = 0;
    a.run.end_ms = 100000;
    b.run = a.run;
    b.run.id = 2;
    b.run.end_ms = 50000;
    b.run.exit_status = 1;
    store::RecordedFinding f;
    f.rule = "input_bound";
    f.severity = "warning";
    f.subject = "job";
    a.findings.push_back(f);
    const std::string t = compare_runs_text(a, b);
    EXPECT_NE(t.find("resnet-before-"), std::string::npos) << t;  // names cut to the column
    EXPECT_NE(t.find("finished 1"), std::string::npos);
    EXPECT_NE(t.find("duration"), std::string::npos);
    EXPECT_NE(t.find("-50.0 s (-50 %)"), std::string::npos) << t;
    EXPECT_NE(t.find("findings (matched by rule and subject"), std::string::npos);
    EXPECT_EQ(t.find("throughput"), std::string::npos);  // no steps in either: no step rows
    const nlohmann::json j = nlohmann::json::parse(compare_runs_json(a, b));
    EXPECT_EQ(j["figures"][0]["name"], "duration");
    EXPECT_EQ(j["figures"][0]["unit"], "s");
    EXPECT_EQ(j["figures"][0]["a"], 100.0);
    ASSERT_EQ(j["findings"].size(), 1u);
    EXPECT_EQ(j["findings"][0]["status"], "gone");
    EXPECT_EQ(j["findings"][0]["severity_a"], "warning");
    EXPECT_FALSE(j["findings"][0].contains("severity_b"));
}

// A host finding the run's job made under half of (another user's load) is listed apart, never as
// "new" or "gone"; one the job made itself stays among the run's findings.
TEST(CompareView, OtherProcessesLoadIsNoEffectOfTheRun) {
    store::StoredRun a, b;
    a.run.id = 1;
    a.run.state = store::RunState::finished;
    b.run = a.run;
    b.run.id = 2;
    auto host_finding = [](const char* rule, double share) {
        store::RecordedFinding f;
        f.rule = rule;
        f.severity = "warning";
        f.subject = "host";
        diagnose::Evidence e;
        e.metric = "run.job_share_of_load_percent";
        e.average = share;
        f.evidence.push_back(e);
        return f;
    };
    b.findings.push_back(host_finding("cpu_load_high", 12));
    a.findings.push_back(host_finding("swap_active", 30));
    b.findings.push_back(host_finding("io_wait_high", 90));
    const std::string t = compare_runs_text(a, b);
    const std::size_t apart = t.find("on the host, from other processes (no effect of either run):\n");
    ASSERT_NE(apart, std::string::npos) << t;
    EXPECT_NE(t.find("  cpu_load_high [host]: in the second run only, its job made 12 % of the load", apart),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("  swap_active [host]: in the first run only, its job made 30 % of the load", apart),
              std::string::npos)
        << t;
    EXPECT_LT(t.find("io_wait_high [host]: new"), apart) << "the run's own load is its effect\n" << t;
    const nlohmann::json j = nlohmann::json::parse(compare_runs_json(a, b));
    ASSERT_EQ(j["findings"].size(), 3u);
    for (const nlohmann::json& f : j["findings"]) {
        if (f["rule"] == "io_wait_high") {
            EXPECT_EQ(f["cause"], "the run's job");
            EXPECT_EQ(f["job_share_b"], 90.0);
        } else {
            EXPECT_EQ(f["cause"], "other processes") << f.dump();
        }
    }
}

TEST(CompareView, TheProfilerWindowsStepsRowByRow) {
    store::StoredRun a, b;
    a.run.id = 1;
    a.run.state = store::RunState::finished;
    b.run = a.run;
    b.run.id = 2;
    // Before: 1 ms steps, 600 us in the DataLoader; after: 0.5 ms steps, 100 us in it.
    auto window = [](double step, double data) {
        test::TraceBuilder t;
        t.step(1, 0, step)
            .op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, data, 1, "user_annotation")
            .kernel("ampere_sgemm_128x64_nn", data, data + 5, step - data - 10);
        return report::step_section({{0, 0, 1, t.json()}});
    };
    const auto before = window(1000, 600), after = window(500, 100);
    const std::string t = compare_runs_text(a, b, &*before, &*after);
    EXPECT_NE(t.find("step (the profiler windows' mean step, ms):"), std::string::npos) << t;
    EXPECT_NE(t.find("  step                         1.0 ms         0.5 ms   -0.5 ms"), std::string::npos) << t;
    EXPECT_NE(t.find("  host data                    0.6 ms         0.1 ms   -0.5 ms"), std::string::npos) << t;
    EXPECT_NE(t.find("  GPU0 gemm"), std::string::npos) << t;
    const auto j = nlohmann::json::parse(compare_runs_json(a, b, &*before, &*after));
    ASSERT_TRUE(j["step"].is_array());
    EXPECT_EQ(j["step"][0]["name"], "step");
    EXPECT_DOUBLE_EQ(j["step"][0]["a_ms"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(j["step"][0]["b_ms"].get<double>(), 0.5);
    // One window only: said; none: no block.
    const std::string one = compare_runs_text(a, b, &*before, nullptr);
    EXPECT_NE(one.find("(only run 1 has a profiler window: baton run --profile)"), std::string::npos) << one;
    EXPECT_TRUE(nlohmann::json::parse(compare_runs_json(a, b, &*before, nullptr))["step"][0]["b_ms"].is_null());
    EXPECT_EQ(compare_runs_text(a, b).find("step (the profiler"), std::string::npos);
    EXPECT_TRUE(nlohmann::json::parse(compare_runs_json(a, b))["step"].empty());
}
