// `baton run` on a real workload in three phases: burn two cores, then hold 1 GB, then write
// 500 MB with fsync. The recorded series must show each phase, and the findings must agree with
// what was recorded (asserted on the recorded values, not on the machine being slow or busy).
// Serial (in diagnose_live_test): it loads the whole machine.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "test_support.hpp"

using namespace baton::test;
using nlohmann::json;

namespace {

constexpr const char* kWorkload = R"(
import os, sys, time, multiprocessing as mp
def burn(seconds):
    end = time.time() + seconds
    while time.time() < end: pass
if __name__ == "__main__":
    phase = sys.argv[1]
    ps = [mp.Process(target=burn, args=(4,)) for _ in range(2)]
    for p in ps: p.start()
    for p in ps: p.join()
    block = bytearray(1 << 30)              # 1 GiB, touched so it is resident
    for i in range(0, len(block), 4096): block[i] = 1
    time.sleep(3)
    del block
    with open(phase, "wb") as f:            # 500 MB, each 8 MB made durable
        chunk = b"x" * (8 << 20)
        for _ in range(62):
            f.write(chunk); f.flush(); os.fsync(f.fileno())
    os.unlink(phase)
)";

}  // namespace

TEST(RunWorkload, PhasesAreRecordedAndJudged) {
    TempDir d;
    d.write("workload.py", kWorkload);
    d.write("baton.toml", "[thresholds]\nwindow_seconds = 3\n");
    const std::string db = d.path() + "/baton.db";
    // The file is written in the working directory (the build tree): /tmp may be a tmpfs.
    auto r = run({baton_binary(), "--config", d.path() + "/baton.toml", "run", "--no-gpus", "--interval", "0.25",
                  "--db", db, "--", "/usr/bin/python3", d.path() + "/workload.py", "workload-phase3.bin"},
                 {}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto exported = run({baton_binary(), "runs", "export", "1", "--db", db});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    std::vector<json> samples;
    std::istringstream in(exported.out);
    for (std::string line; std::getline(in, line);) samples.push_back(json::parse(line));
    ASSERT_GT(samples.size(), 20u);

    // Phase 1: two busy worker processes in the job. Phase 2: about 1 GiB resident.
    double cpu_peak = 0, rss_peak = 0;
    std::size_t host_busy = 0;
    for (const json& s : samples) {
        cpu_peak = std::max(cpu_peak, s["job_cpu_percent"].get<double>());
        rss_peak = std::max(rss_peak, s["job_rss_bytes"].get<double>() / 1073741824.0);
        host_busy += s["cpu_percent"].get<double>() > 80 ? 1 : 0;
    }
    EXPECT_GT(cpu_peak, 150) << "the two burning workers were not seen";
    EXPECT_GT(rss_peak, 0.9) << "the 1 GiB phase was not seen";
    // Phase 3: I/O wait while writing, in the last third of the samples.
    double iowait_peak = 0, iowait_sum = 0;
    std::size_t tail = 0;
    for (std::size_t i = samples.size() * 2 / 3; i < samples.size(); ++i, ++tail) {
        iowait_peak = std::max(iowait_peak, samples[i]["iowait_percent"].get<double>());
        iowait_sum += samples[i]["iowait_percent"].get<double>();
    }

    auto show = run({baton_binary(), "runs", "show", "1", "--db", db});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    const bool cpu_finding = show.out.find("cpu_load_high") != std::string::npos;
    const bool io_finding = show.out.find("io_wait_high") != std::string::npos;
    // A host that was busy in at least the 3 s window's share of samples must have been judged so
    // (12 samples at 0.25 s = 3 s); a host never above 80 % must not.
    if (host_busy >= 12) {
        EXPECT_TRUE(cpu_finding) << show.out;
    }
    if (host_busy == 0) {
        EXPECT_FALSE(cpu_finding) << show.out;
    }
    // io_wait_high judges the average over the last 3 s (13 samples at 0.25 s) at every tick: a
    // recorded 3 s average clearly above the 5 % alarm must have given it, one clearly below must not.
    double best_window = 0;
    for (std::size_t end = 13; end <= samples.size(); ++end) {
        double sum = 0;
        for (std::size_t i = end - 13; i < end; ++i) sum += samples[i]["iowait_percent"].get<double>();
        best_window = std::max(best_window, sum / 13);
    }
    if (best_window > 6) {
        EXPECT_TRUE(io_finding) << show.out;
    }
    if (best_window < 4) {
        EXPECT_FALSE(io_finding) << show.out;
    }
    RecordProperty("iowait_peak", static_cast<int>(iowait_peak));
    std::printf(
        "samples %zu, job CPU peak %.0f %%, RSS peak %.2f GiB, busy host samples %zu, I/O wait peak %.1f %% "
        "(best 3 s average %.1f %%, last third %.1f %%), findings: cpu_load_high %d io_wait_high %d\n",
        samples.size(), cpu_peak, rss_peak, host_busy, iowait_peak, best_window,
        tail ? iowait_sum / static_cast<double>(tail) : 0, cpu_finding, io_finding);
}
