// The agent judges a window whose older snapshots keep only some processes (serve/diagnosis_window.hpp):
// every recorded and generated scenario of the diagnosis corpus, fed one snapshot at a time as the
// agent takes them, gives the same diagnosis JSON (findings, evidence, indicators, window), word for
// word, as the same window of whole snapshots, after every snapshot.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "diagnose/indicators.hpp"
#include "diagnose/rules.hpp"
#include "report/findings_view.hpp"
#include "serve/diagnosis_window.hpp"
#include "test_support.hpp"
#include "formats/snapshot_json_read.hpp"

using namespace baton;
using namespace baton::diagnose;
using namespace baton::report;
using namespace baton::store;
using namespace baton::formats;

namespace {

std::string judged(const Window& w, const Thresholds& t) {
    std::string out;
    append_findings_json(diagnosis_info(w, "live"), diagnose::diagnose(w, t), summarize_indicators(w, t), out);
    return out;
}

ProcessInfo process(std::uint32_t pid, std::uint32_t ppid, std::optional<double> cpu) {
    ProcessInfo p;
    p.pid = pid;
    p.ppid = ppid;
    p.name = "p" + std::to_string(pid);
    p.command = "/usr/bin/p" + std::to_string(pid) + " --a long command line that does not fit in place";
    p.cgroup = "/system.slice/a-service-with-a-long-name.service";
    p.cpu_percent = cpu;
    return p;
}

}  // namespace

TEST(DiagnosisWindow, JudgesTheCorpusAsWholeSnapshotsDo) {
    const Thresholds t;
    int scenarios = 0, windows = 0, with_findings = 0;
    std::size_t dropped = 0;
    for (const auto& entry : std::filesystem::directory_iterator(baton::test::source_dir() + "/tests/scenarios")) {
        if (entry.path().extension() != ".jsonl") continue;
        std::ifstream in(entry.path());
        serve::DiagnosisWindow trimmed;
        Window full;
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            Result<Snapshot> s = parse_snapshot_json(line);
            ASSERT_TRUE(s.ok()) << entry.path() << ": " << s.error().message;
            trimmed.add(*s, t.window_seconds);
            full.push_back(std::move(*s));
            const double oldest = seconds(full.back()) - t.window_seconds;
            full.erase(full.begin(),
                       std::find_if(full.begin(), full.end(), [&](const Snapshot& x) { return seconds(x) >= oldest; }));
            ASSERT_EQ(full.size(), trimmed.snapshots().size()) << entry.path();
            const std::string a = judged(full, t);
            ASSERT_EQ(a, judged(trimmed.snapshots(), t)) << entry.path() << " after " << full.size();
            with_findings += a.find("\"rule\"") != std::string::npos;
            ++windows;
        }
        for (std::size_t i = 0; i + 1 < full.size(); ++i)
            dropped += full[i].processes.size() - trimmed.snapshots()[i].processes.size();
        ++scenarios;
    }
    EXPECT_GT(scenarios, 10);
    EXPECT_GT(with_findings, 50) << "the corpus should give findings to compare";
    EXPECT_GT(dropped, 0u) << "the corpus should have idle processes to leave out";
    std::printf("%d windows of %d scenarios compared\n", windows, scenarios);
}

TEST(DiagnosisWindow, OlderSnapshotsKeepGpuTreesAndBusyProcesses) {
    Snapshot s;
    s.monotonic_seconds = 100;
    s.processes = {process(1, 0, 0),   process(2, 1, 0),   process(10, 1, 0),  process(11, 10, 0),
                   process(12, 11, 0), process(20, 1, 35), process(30, 1, {}), process(40, 40, 0)};
    GpuInfo g;
    GpuProcess gp;
    gp.pid = 10;  // the trainer: itself and its idle workers (11, and 12 below it) stay
    g.processes.push_back(gp);
    s.gpus.push_back(g);
    serve::DiagnosisWindow w;
    w.add(s, 30);
    ASSERT_EQ(w.snapshots().size(), 1u);
    EXPECT_EQ(w.snapshots()[0].processes.size(), 8u) << "the newest keeps every process";
    EXPECT_TRUE(w.snapshots()[0].processes[0].command.empty()) << "no command lines in the window";
    EXPECT_TRUE(w.snapshots()[0].processes[0].cgroup.empty());

    Snapshot next = s;
    next.monotonic_seconds = 101;
    w.add(next, 30);
    ASSERT_EQ(w.snapshots().size(), 2u);
    std::vector<std::uint32_t> kept;
    for (const ProcessInfo& p : w.snapshots()[0].processes) kept.push_back(p.pid);
    // 10-12: the GPU process's tree; 20: used CPU; 30: CPU not known yet. 1, 2 and 40 were idle.
    EXPECT_EQ(kept, (std::vector<std::uint32_t>{10, 11, 12, 20, 30}));
    EXPECT_EQ(w.snapshots()[1].processes.size(), 8u);

    next.monotonic_seconds = 140;  // the first two are now more than 30 s old
    w.add(next, 30);
    EXPECT_EQ(w.snapshots().size(), 1u);
}

TEST(DiagnosisWindow, AParentCycleEndsTheWalk) {
    Snapshot s;
    s.processes = {process(5, 6, 0), process(6, 5, 0), process(7, 1, 0)};  // a hostile recording
    GpuInfo g;
    GpuProcess gp;
    gp.pid = 5;
    g.processes.push_back(gp);
    s.gpus.push_back(g);
    serve::keep_window_processes(s);
    ASSERT_EQ(s.processes.size(), 2u);
    EXPECT_EQ(s.processes[0].pid, 5u);
    EXPECT_EQ(s.processes[1].pid, 6u);
}
