// Prometheus text output: accepted by the real promtool, and every sample has a TYPE.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "sample/sampler.hpp"
#include "store/snapshot_prometheus.hpp"
#include "test_support.hpp"

using namespace baton;

namespace {

std::string exposition() {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    test::use_scenario("throttled");
    SamplerOptions o;
    o.proc_root = d.path() + "/proc";
    o.sys_root = d.path() + "/sys";
    o.shm_path = d.path();
    o.nvml.library_path = test::fake_nvml_library("throttled");
    o.priming_seconds = 0.01;
    Sampler s(o);
    Snapshot snap;
    s.take(snap);
    // A hostile process name must stay inside its label.
    snap.processes[0].name = "a\"b\\c\nd";
    std::string out;
    append_snapshot_prometheus(snap, out);
    return out;
}

}  // namespace

TEST(SnapshotPrometheus, PromtoolAcceptsIt) {
    test::TempDir d;
    std::string text = exposition();
    d.write("metrics.txt", text);
    auto r = test::run({"/bin/sh", "-c", "promtool check metrics < " + d.path() + "/metrics.txt"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out + r.err, "");  // no lint warnings either
}

TEST(SnapshotPrometheus, EverySampleHasHelpAndType) {
    std::istringstream in(exposition());
    std::set<std::string> typed, helped;
    std::string line;
    int samples = 0;
    while (std::getline(in, line)) {
        if (line.rfind("# TYPE ", 0) == 0)
            typed.insert(line.substr(7, line.find(' ', 7) - 7));
        else if (line.rfind("# HELP ", 0) == 0)
            helped.insert(line.substr(7, line.find(' ', 7) - 7));
        else if (!line.empty()) {
            std::string name = line.substr(0, line.find_first_of("{ "));
            EXPECT_TRUE(typed.count(name)) << name;
            EXPECT_TRUE(helped.count(name)) << name;
            EXPECT_EQ(name.rfind("baton_", 0), 0u) << name;
            ++samples;
        }
    }
    EXPECT_GT(samples, 40);
}

TEST(SnapshotPrometheus, UnitsAndThrottleReasons) {
    std::string t = exposition();
    EXPECT_NE(t.find("baton_gpu_throttle_reason{gpu=\"0\",uuid=\"GPU-tttttttt-0000-4000-8000-000000000000\",reason="
                     "\"hw_thermal_slowdown\"} 1"),
              std::string::npos);
    EXPECT_NE(t.find("baton_gpu_sm_clock_hertz{gpu=\"0\",uuid=\"GPU-tttttttt-0000-4000-8000-000000000000\"} 900000000"),
              std::string::npos);
    EXPECT_NE(t.find("baton_network_speed_bytes_per_second{interface=\"eth0\"} 3125000000"), std::string::npos);
    EXPECT_NE(t.find("name=\"a\\\"b\\\\c\\nd\""), std::string::npos);
    EXPECT_NE(t.find("baton_gpu_driver_info{version=\"550.00.00\"} 1"), std::string::npos);
}
