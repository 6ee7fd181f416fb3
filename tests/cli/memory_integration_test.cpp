// baton run's out-of-memory autopsy end to end: a real PyTorch loop (Debian's CPU build, with the
// fake allocator of python/tests/fake_cuda_memory.py standing for CUDA) runs out of memory in its
// forward pass; the hook captures the allocator before the error unwinds, baton takes the capture
// from the run's directory, explains the failure by what held the memory, keeps the capture, and
// refuses a capture it did not ask for.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "store/history.hpp"
#include "store/history_runs.hpp"
#include "test_support.hpp"

using namespace baton::test;

namespace {

std::map<std::string, double> figures_of(const nlohmann::json& finding) {
    std::map<std::string, double> out;
    for (const auto& e : finding["evidence"])
        if (e.contains("maximum")) out[e["metric"].get<std::string>()] = e["maximum"].get<double>();
    return out;
}

nlohmann::json finding(const nlohmann::json& run, const std::string& rule) {
    for (const auto& f : run["finding_list"])
        if (f["rule"] == rule) return f;
    return {};
}

}  // namespace

TEST(Memory, AnOutOfMemoryErrorIsCapturedAndExplainedByWhatHeldTheMemory) {
    TempDir d;
    const std::string db = d.path() + "/h.db";
    const std::map<std::string, std::string> env = {{"PYTHONPATH", source_dir() + "/python"}};
    auto r = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--db", db, "--", "/usr/bin/python3",
                  source_dir() + "/python/tests/oom_train.py"},
                 env, 120);
    ASSERT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 MiB"),
              std::string::npos)
        << r.err;  // the traceback passes through
    // Said as it happened, then in the summary with the capture's breakdown (the failing frame is the
    // fake allocator's: PyTorch's own frames are skipped, the fake is the script's).
    EXPECT_NE(r.err.find("critical cuda_oom [job]: cuda:0 ran out of memory at fake_cuda_memory.py:"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(" in fake_alloc: 1.00 MiB asked with 959.72 KiB free; of the 1.00 MiB allocated, activations "
                         "1.00 MiB"),
              std::string::npos)
        << r.err;
    // From the steps: what they kept (the model) and their peaks (two layers of 8 KiB a sample), against
    // the 2 MiB GPU less 5 %: (1.9 MiB - 288 B) / 16 KiB a sample.
    EXPECT_NE(r.err.find("A batch of about 121 fits (this one: 128)."), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("could not be read"), std::string::npos) << r.err;

    const auto shown = nlohmann::json::parse(run({baton_binary(), "runs", "show", "1", "--json", "--db", db}).out);
    const nlohmann::json oom = finding(shown, "cuda_oom");
    ASSERT_FALSE(oom.is_null()) << shown;
    // One record: the first sighting's, replaced by the explanation with the capture.
    int records = 0;
    for (const auto& f : shown["finding_list"]) records += f["rule"] == "cuda_oom" ? 1 : 0;
    EXPECT_EQ(records, 1) << shown;
    const auto f = figures_of(oom);
    EXPECT_EQ(f.at("oom.requested_bytes"), 1048576.0) << oom;
    EXPECT_EQ(f.at("oom.activations_bytes"), 1048576.0) << oom;
    EXPECT_EQ(f.at("oom.parameters_bytes"), 288.0) << oom;  // the Linear's 8x8 weight and 8 biases, float32
    EXPECT_NE(oom["recommendation"].get<std::string>().find("Activations"), std::string::npos) << oom;
    bool site = false;
    for (const auto& e : oom["evidence"])
        site |= e["metric"] == "oom.site_bytes" && e["threshold"] == "oom_train.py:18 in forward (activations)";
    EXPECT_TRUE(site) << oom;

    // The capture is kept with the run, as the hook wrote it.
    auto h = baton::store::History::open(db, baton::store::HistoryAccess::read);
    ASSERT_TRUE(h.ok()) << h.error().message;
    auto captures = h->run_reads().oom_captures(1);
    ASSERT_TRUE(captures.ok()) << captures.error().message;
    ASSERT_EQ(captures->size(), 1u);
    const auto capture = nlohmann::json::parse((*captures)[0].json);
    EXPECT_EQ(capture["phase"], "forward");
    EXPECT_EQ(capture["step"], 5);
    EXPECT_EQ(capture["batch_size"], 128);
    // The report's Memory section: the breakdown and the site.
    auto md = run({baton_binary(), "report", "1", "--markdown", "--db", db});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("## Memory"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| activations | 1.00 MiB |"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| `oom_train.py:18 in forward (activations)` | 1.00 MiB |"), std::string::npos) << md.out;
    // Each step carried the allocator's figures.
    auto steps = run({baton_binary(), "runs", "export", "1", "--steps", "--db", db});
    EXPECT_NE(steps.out.find("\"peak_allocated_bytes\""), std::string::npos) << steps.out;
}

TEST(Memory, WithoutTheObserverTheUncaughtErrorIsCaptured) {
    TempDir d;
    const std::map<std::string, std::string> env = {{"PYTHONPATH", source_dir() + "/python"}};
    auto r = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--no-db", "--", "/usr/bin/python3",
                  source_dir() + "/python/tests/oom_train.py", "--no-observer"},
                 env, 120);
    ASSERT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("activations 1.00 MiB"), std::string::npos) << r.err;
}

TEST(Memory, MemoryHistoryIsAskedOfThePythonHookAndBadValuesRefused) {
    TempDir d;
    d.write("env.py",
            "import os; print(os.environ.get('BATON_MEMORY_HISTORY'), os.path.basename("
            "os.environ['BATON_MEMORY_DIR']))\n");
    auto r = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--no-db", "--memory-history", "--",
                  "/usr/bin/python3", d.path() + "/env.py"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "10000 memory\n");
    r = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--no-db", "--memory-history=500", "--",
             "/usr/bin/python3", d.path() + "/env.py"});
    EXPECT_EQ(r.out, "500 memory\n");
    r = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--no-db", "--", "/usr/bin/python3",
             d.path() + "/env.py"});
    EXPECT_EQ(r.out, "None memory\n");  // the capture is always asked for, the history only with the flag
    for (const char* bad : {"--memory-history=0", "--memory-history=lots", "--memory-history=99999999"}) {
        r = run({baton_binary(), "run", "--no-db", bad, "--", "true"});
        EXPECT_EQ(r.exit_code, 2) << bad;
        EXPECT_NE(r.err.find("is not a number of events from 1 to 10000000"), std::string::npos) << r.err;
    }
}

TEST(Memory, ACaptureOutsideTheRunsDirectoryOrBrokenIsRefusedInOneLine) {
    TempDir d;
    d.write("bad.json", "{\"baton_oom_capture\": 1, \"snapshot\": {\"segments\": 7}}");
    d.write(
        "send.py",
        "import json, os, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
        "where = sys.argv[1] if sys.argv[1] != 'inside' else os.path.join(os.environ['BATON_MEMORY_DIR'], 'x.json')\n"
        "if sys.argv[1] == 'inside':\n"
        "    open(where, 'w').write(open(sys.argv[2]).read())\n"
        "s.sendto(json.dumps({'type': 'oom', 'path': where, 'rank': 0, 't': 1}).encode(), os.environ['BATON_EVENTS'])\n"
        "print('CUDA out of memory. Tried to allocate 2.00 GiB', file=sys.stderr)\n"
        "sys.exit(1)\n");
    auto outside = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--no-db", "--",
                        "/usr/bin/python3", d.path() + "/send.py", d.path() + "/bad.json"});
    EXPECT_EQ(outside.exit_code, 1);
    EXPECT_NE(outside.err.find("baton: the out-of-memory capture outside the run's directory refused: " + d.path() +
                               "/bad.json\n"),
              std::string::npos)
        << outside.err;
    auto broken = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--no-db", "--", "/usr/bin/python3",
                       d.path() + "/send.py", "inside", d.path() + "/bad.json"});
    EXPECT_EQ(broken.exit_code, 1);
    EXPECT_NE(broken.err.find("x.json: the capture's snapshot.segments: expected an array\n"), std::string::npos)
        << broken.err;
    // The finding still comes, from the message alone.
    EXPECT_NE(broken.err.find("critical cuda_oom [job]"), std::string::npos) << broken.err;
}

TEST(Memory, BeforeAnyOomTheAllocatorsFiguresSayLeakAndHeadRoom) {
    TempDir d;
    // A 1 MiB leak threshold: the fake GPU is 2 MiB.
    d.write("baton.toml", "[thresholds]\ngpu_memory_leak_bytes = 1048576\n");
    const std::map<std::string, std::string> env = {{"PYTHONPATH", source_dir() + "/python"}};
    auto r = run({baton_binary(), "--config", d.path() + "/baton.toml", "run", "--no-gpus", "--interval", "0.2",
                  "--no-db", "--", "/usr/bin/python3", source_dir() + "/python/tests/leak_train.py", "40"},
                 env, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning gpu_memory_leak [job]: the memory kept across steps grew from "), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("(0.1 MiB a step)"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("critical gpu_memory_near_oom [job]: the peak step allocated "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("of the 2.00 MiB cuda:0 leaves the job"), std::string::npos) << r.err;
}
