// `baton profile FILE` end to end: the real binary on a Kineto-layout trace (plain and gzipped),
// on a trace Debian's PyTorch records here, with [profile] min_share from a config file and
// --min-share, and on hostile files: each a one-line error and exit status 1, never a crash.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "profile/trace_builder.hpp"
#include "test_support.hpp"

using baton::test::baton_binary;
using baton::test::run;
using baton::test::TempDir;
using baton::test::TraceBuilder;

namespace {

// Two 1 ms steps: a DataLoader of 300 us in the training process, a pageable copy, an .item() that
// drains the GPU at train.py(42).
std::string starved_trace() {
    TraceBuilder b;
    for (int s = 0; s < 2; ++s) {
        const double o = s * 1000.0;
        b.step(10 + s, o, 1000)
            .op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", o, 300, 1, "user_annotation")
            .memcpy("Memcpy HtoD (Pageable -> Device)", o + 300, o + 310, 80, 2'000'000)
            .kernel("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn", o + 400, o + 410, 260);
        // The sync blocks the host from 570 while the GPU runs to 670: it drains the queue.
        b.python("train.py(42): train_step", o + 560, 140).op("aten::item", o + 565, 130);
        b.runtime("cudaStreamSynchronize", o + 570, 110);
        b.kernel("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn", o + 700, o + 710, 200);
    }
    return b.json();
}

bool one_line(const std::string& err) {
    return !err.empty() && err.find('\n') == err.size() - 1;
}

}  // namespace

TEST(Profile, AKinetoTraceIsBrokenDownAndJudgedInTextAndJson) {
    TempDir d;
    d.write("trace.json", starved_trace());
    const std::string path = d.path() + "/trace.json";
    auto r = run({baton_binary(), "--config", "/dev/null", "profile", path});
    EXPECT_EQ(r.exit_code, 1) << "a warning: " << r.out << r.err;
    for (const char* part : {"Kineto trace", "2 steps (#10 to #11)", "1 GPU", "Step: 1.00 ms on average", "GPU0",
                             "copy H2D", "idle: host wait", "DataLoader", "Where the host waited for the GPU",
                             "aten::item (cudaStreamSynchronize) at "
                             "train.py(42): train_step",
                             "Top kernels", "WARNING   data_in_step  [host]", "sync_in_step", "pageable_copy",
                             "see: baton explain data_in_step", "pin_memory=True"})
        EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;

    auto j = run({baton_binary(), "--config", "/dev/null", "profile", "--json", path});
    EXPECT_EQ(j.exit_code, 1);
    const nlohmann::json doc = nlohmann::json::parse(j.out);
    EXPECT_EQ(doc["format"], "kineto");
    EXPECT_EQ(doc["steps"].size(), 2u);
    EXPECT_EQ(doc["steps"][0]["number"], 10);
    EXPECT_DOUBLE_EQ(doc["mean"]["step_ms"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(doc["mean"]["host"]["data"].get<double>(), 0.3);
    EXPECT_DOUBLE_EQ(doc["mean"]["gpus"][0]["pageable_h2d_ms"].get<double>(), 0.08);
    double slices = 0;
    for (const auto& [k, v] : doc["steps"][1]["gpus"][0]["ms"].items()) slices += v.get<double>();
    EXPECT_NEAR(slices, 1.0, 1e-9) << "the GPU's slices add up to the step";
    EXPECT_EQ(doc["syncs"][0]["where"], "train.py(42): train_step");
    std::vector<std::string> rules;
    for (const auto& f : doc["findings"]) rules.push_back(f["rule"]);
    EXPECT_EQ(rules, (std::vector<std::string>{"data_in_step", "sync_in_step", "pageable_copy"})) << j.out;
    EXPECT_EQ(doc["findings"][0]["doc"], "docs/findings.md#data_in_step");
}

TEST(Profile, AGzippedTraceReadsTheSameAsThePlainOne) {
    TempDir d;
    d.write("trace.json", starved_trace());
    auto gz = run({"/bin/sh", "-c", "gzip -c " + d.path() + "/trace.json > " + d.path() + "/trace.pt.trace.json.gz"});
    ASSERT_EQ(gz.exit_code, 0) << gz.err;
    auto plain = run({baton_binary(), "--config", "/dev/null", "profile", "--json", d.path() + "/trace.json"});
    auto zipped =
        run({baton_binary(), "--config", "/dev/null", "profile", "--json", d.path() + "/trace.pt.trace.json.gz"});
    EXPECT_EQ(zipped.exit_code, plain.exit_code);
    auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(zipped.out);
    a.erase("source"), b.erase("source");
    EXPECT_EQ(a, b);
}

TEST(Profile, MinShareFromTheConfigAndTheFlag) {
    TempDir d;
    d.write("trace.json", starved_trace());
    d.write("baton.toml", "[profile]\nmin_share = 0.5\n");
    const std::string path = d.path() + "/trace.json";
    auto cfg = run({baton_binary(), "--config", d.path() + "/baton.toml", "profile", path});
    EXPECT_EQ(cfg.exit_code, 1) << cfg.out;
    EXPECT_EQ(cfg.out.find("pageable_copy"), std::string::npos) << "8 % is under 50 %";
    EXPECT_NE(cfg.out.find("WARNING   data_in_step"), std::string::npos)
        << "the data wait has input_bound's scale ([thresholds] data_wait_percent), not min_share\n"
        << cfg.out;
    d.write("quiet.toml", "[profile]\nmin_share = 0.5\n[thresholds]\ndata_wait_percent = 50\n");
    auto quiet = run({baton_binary(), "--config", d.path() + "/quiet.toml", "profile", path});
    EXPECT_EQ(quiet.exit_code, 0) << quiet.out;
    EXPECT_NE(quiet.out.find("none: nothing costs [profile] min_share of the step or more"), std::string::npos);
    d.write("info.toml", "[thresholds]\ndata_wait_warning_percent = 40\n");
    auto info = run({baton_binary(), "--config", d.path() + "/info.toml", "profile", "--min-share", "0.5", path});
    EXPECT_NE(info.out.find("INFO      data_in_step"), std::string::npos) << "30 % is under 40 %\n" << info.out;
    auto flag = run({baton_binary(), "--config", d.path() + "/quiet.toml", "profile", "--min-share", "0.05", path});
    EXPECT_EQ(flag.exit_code, 0) << "the flag wins: pageable_copy's 8 % is back, as information";
    EXPECT_NE(flag.out.find("pageable_copy"), std::string::npos) << flag.out;
    d.write("bad.toml", "[profile]\nmin_share = 5\n");
    auto bad = run({baton_binary(), "--config", d.path() + "/bad.toml", "profile", path});
    EXPECT_EQ(bad.exit_code, 1) << "as every command with a bad config";
    EXPECT_TRUE(one_line(bad.err)) << bad.err;
    auto usage = run({baton_binary(), "--config", "/dev/null", "profile", "--min-share", "2", path});
    EXPECT_EQ(usage.exit_code, 2);
    auto none = run({baton_binary(), "--config", "/dev/null", "profile"});
    EXPECT_EQ(none.exit_code, 2) << "the file is required";
}

TEST(Profile, HostileFilesAreOneLineErrors) {
    TempDir d;
    d.write("not.json", "this is not json");
    d.write("no_events.json", R"({"schemaVersion": 1})");
    d.write("deep.json", R"({"traceEvents": )" + std::string(100, '[') + std::string(100, ']') + "}");
    d.write("truncated.json", starved_trace().substr(0, 700));
    d.write("trace.json", starved_trace());
    d.write("nul.json", std::string("{\"traceEvents\": [\0]}", 20));
    ASSERT_EQ(run({"/bin/sh", "-c",
                   "cd " + d.path() + " && gzip -c trace.json > full.gz && head -c 300 full.gz > cut.json.gz"})
                  .exit_code,
              0);
    ASSERT_EQ(run({"/bin/mkdir", d.path() + "/dir.json"}).exit_code, 0);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"missing.json", "No such file or directory"},
        {"dir.json", "is not a regular file"},
        {"not.json", "not a trace's JSON at byte"},
        {"no_events.json", "not a profiler trace: no traceEvents array"},
        {"deep.json", "nested deeper than 64 levels"},
        {"truncated.json", "not a trace's JSON"},
        {"cut.json.gz", "cut.json.gz"},
        {"nul.json", "not a trace's JSON"},
    };
    for (const auto& [file, message] : cases) {
        auto r = run({baton_binary(), "--config", "/dev/null", "profile", d.path() + "/" + file});
        EXPECT_EQ(r.exit_code, 1) << file << ": " << r.err;
        EXPECT_TRUE(one_line(r.err)) << file << ": " << r.err;
        EXPECT_NE(r.err.find(message), std::string::npos) << file << ": " << r.err;
        EXPECT_TRUE(r.out.empty()) << file;
    }
}

TEST(Profile, ATraceDebiansPytorchRecordsHere) {
    TempDir d;
    const std::string path = d.path() + "/trace.json";
    auto rec = run({"/usr/bin/python3", "-c",
                    "import sys, time, torch\n"
                    "from torch.profiler import profile, ProfilerActivity, schedule\n"
                    "class Slow(torch.utils.data.Dataset):\n"
                    "    def __len__(self): return 1000\n"
                    "    def __getitem__(self, i): time.sleep(0.002); return torch.randn(32)\n"
                    "m = torch.nn.Linear(32, 32); opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                    "with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2),\n"
                    "             on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1])) as p:\n"
                    "    for i, x in enumerate(torch.utils.data.DataLoader(Slow(), batch_size=4)):\n"
                    "        m(x).sum().backward(); opt.step(); opt.zero_grad(); p.step()\n"
                    "        if i == 4: break\n",
                    path},
                   {}, 120);
    ASSERT_EQ(rec.exit_code, 0) << rec.err;
    auto r = run({baton_binary(), "--config", "/dev/null", "profile", path});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("legacy profiler trace"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("No GPU activity in the trace"), std::string::npos);
    EXPECT_NE(r.out.find("data_in_step"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("num_workers=0"), std::string::npos) << r.out;
}

namespace {

// A training loop with the hook: a Dataset of 2 ms a sample, num_workers=0, an .item() per step.
const char* kHookedLoop =
    "import sys, time, torch, baton.torch\n"
    "from torch.utils.data import DataLoader, Dataset\n"
    "class Slow(Dataset):\n"
    "    def __len__(self): return int(sys.argv[1]) * 8\n"
    "    def __getitem__(self, i):\n"
    "        time.sleep(0.002)\n"
    "        return torch.randn(64), i % 10\n"
    "m = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))\n"
    "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
    "def train_step(x, y):\n"
    "    loss = torch.nn.functional.cross_entropy(m(x), y)\n"
    "    loss.backward(); opt.step(); opt.zero_grad()\n"
    "    return loss.item()\n"
    "for x, y in baton.torch.watch(DataLoader(Slow(), batch_size=8)):\n"
    "    train_step(x, y)\n";

}  // namespace

TEST(Profile, BatonRunProfileRecordsAWindowJudgesItAndKeepsIt) {
    TempDir d;
    d.write("train.py", kHookedLoop);
    d.write("baton.toml", "[profile]\nwarmup = 4\n");
    const std::string db = d.path() + "/h.db", config = d.path() + "/baton.toml";
    const std::map<std::string, std::string> env = {{"PYTHONPATH", baton::test::source_dir() + "/python"}};
    auto r = run({baton_binary(), "--config", config, "run", "--no-gpus", "--db", db, "--profile=3", "--",
                  "/usr/bin/python3", d.path() + "/train.py", "20"},
                 env, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* part :
         {"baton profile: the window of python3", "3 steps (#", "DataLoader", "aten::item at train.py(",
          "): train_step", "WARNING   data_in_step  [host]", "recorded as run 1", "  warning data_in_step [host]"})
        EXPECT_NE(r.err.find(part), std::string::npos) << part << "\n" << r.err;

    auto show = run({baton_binary(), "--config", config, "profile", "show", "1", "--db", db});
    EXPECT_EQ(show.exit_code, 1) << show.err;
    EXPECT_NE(show.out.find("run 1 (python3 "), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("data_in_step"), std::string::npos);
    auto as_json = run({baton_binary(), "--config", config, "profile", "show", "1", "--db", db, "--json"});
    const nlohmann::json doc = nlohmann::json::parse(as_json.out);
    EXPECT_EQ(doc["steps"].size(), 3u);
    EXPECT_EQ(doc["format"], "legacy");
    EXPECT_GT(doc["mean"]["host"]["data"].get<double>(), 8 * 2.0 * 0.8) << "8 samples of 2 ms";
    // The window's finding is the run's: baton runs show lists it.
    auto shown = run({baton_binary(), "--config", config, "runs", "show", "1", "--db", db});
    EXPECT_NE(shown.out.find("data_in_step"), std::string::npos) << shown.out;
    auto md = run({baton_binary(), "--config", config, "report", "1", "--db", db, "--markdown"});
    EXPECT_NE(md.out.find("\n## Step\n\nRank 0's profiler window: 3 step(s)"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| host data |"), std::string::npos) << md.out;

    // Without a window: said, and show says so.
    auto shorter = run({baton_binary(), "--config", config, "run", "--no-gpus", "--db", db, "--profile", "--",
                        "/usr/bin/python3", d.path() + "/train.py", "6"},
                       env, 120);
    ASSERT_EQ(shorter.exit_code, 0) << shorter.err;
    EXPECT_NE(shorter.err.find("--profile recorded no window: the run ended after 6 step(s), before the window's 10"),
              std::string::npos)
        << shorter.err;
    auto none = run({baton_binary(), "--config", config, "profile", "show", "2", "--db", db});
    EXPECT_EQ(none.exit_code, 1);
    EXPECT_NE(none.err.find("has no profile window: record one with baton run --profile"), std::string::npos)
        << none.err;
    auto plain = run({baton_binary(), "--config", config, "run", "--no-gpus", "--no-db", "--profile", "--",
                      "/usr/bin/python3", "-c", "print('no hook')"},
                     env, 60);
    EXPECT_EQ(plain.exit_code, 0);
    EXPECT_NE(plain.err.find("the script sent no step. The window is taken inside baton.torch.watch"),
              std::string::npos)
        << plain.err;
    // Bad usage, one line each.
    for (const std::vector<std::string>& bad : {std::vector<std::string>{"profile", "show"},
                                                {"profile", "a.json", "b.json"},
                                                {"profile", "a.json", "--db", db},
                                                {"run", "--profile=0", "--", "true"},
                                                {"run", "--profile=x", "--", "true"}}) {
        std::vector<std::string> argv = {baton_binary(), "--config", "/dev/null"};
        argv.insert(argv.end(), bad.begin(), bad.end());
        auto u = run(argv);
        EXPECT_EQ(u.exit_code, 2) << bad[1] << ": " << u.err;
        EXPECT_TRUE(one_line(u.err)) << u.err;
    }
}

TEST(Profile, AutoTakesAWindowWhenInputBoundFires) {
    TempDir d;
    d.write("train.py", kHookedLoop);
    d.write("baton.toml", "[thresholds]\nwindow_seconds = 4\n");  // input_bound within seconds
    const std::map<std::string, std::string> env = {{"PYTHONPATH", baton::test::source_dir() + "/python"}};
    auto r = run({baton_binary(), "--config", d.path() + "/baton.toml", "run", "--no-gpus", "--no-db", "--profile=auto",
                  "--", "/usr/bin/python3", d.path() + "/train.py", "500"},
                 env, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("baton: input_bound fired: recording a profiler window (--profile=auto)"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("baton profile: the window of python3"), std::string::npos) << r.err;
    EXPECT_LT(r.err.find("input_bound fired"), r.err.find("baton profile: the window of")) << r.err;
    // A short run where nothing fires: no window, and why.
    auto quiet = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--no-db", "--profile=auto", "--",
                      "/usr/bin/python3", d.path() + "/train.py", "5"},
                     env, 120);
    ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
    EXPECT_NE(quiet.err.find("--profile=auto took no window: no finding a profile explains"), std::string::npos)
        << quiet.err;
}
