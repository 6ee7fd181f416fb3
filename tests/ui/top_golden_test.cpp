// Golden frames of `baton top --once` on the fixture machine with fake GPUs: the whole screen
// as text, compared line by line. To accept a deliberate change of the layout, run the test
// with BATON_UPDATE_GOLDEN=1 and review the diff of tests/ui/golden/.
#include <gtest/gtest.h>

#include <fstream>
#include <pwd.h>

#include "test_support.hpp"

using namespace baton::test;
using baton::test::expect_golden;

namespace {

// The fixture's processes belong to uid 1000, whose name depends on the machine running the
// test: the frame is normalised to "user1000" (the column is 8 wide).
std::string normalise_users(std::string frame) {
    std::string name = "1000";
    if (passwd* pw = getpwuid(1000)) name = pw->pw_name;
    name = name.substr(0, 8);
    name.append(8 - name.size(), ' ');
    for (std::size_t at = 0; (at = frame.find(" " + name + " ", at)) != std::string::npos; at += 10)
        frame.replace(at + 1, 8, "user1000");
    return frame;
}

std::string frame(const std::string& scenario, const std::vector<std::string>& extra, int width = 100,
                  int height = 30) {
    TempDir d;
    d.write("baton.toml", "[sample]\nshm_path = \"\"\n");  // /dev/shm of the machine would leak into the frame
    std::vector<std::string> argv{baton_binary(),
                                  "--config",
                                  d.path() + "/baton.toml",
                                  "top",
                                  "--once",
                                  "--width",
                                  std::to_string(width),
                                  "--height",
                                  std::to_string(height),
                                  "--proc-root",
                                  baton::test::fixture_dir() + "/machine/proc",
                                  "--sys-root",
                                  baton::test::fixture_dir() + "/machine/sys"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = run(argv, fake_env(scenario));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return normalise_users(r.out);
}

int count_lines(const std::string& s) {
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST(TopGolden, OneIdleGpu) {
    expect_golden("one-idle", frame("one-idle", {}));
}

TEST(TopGolden, EightBusyGpusOneLineEach) {
    std::string f = frame("eight-busy", {}, 80, 24);
    expect_golden("eight-busy-80x24", f);
    EXPECT_EQ(count_lines(f), 24);
    for (int g = 0; g < 8; ++g) EXPECT_NE(f.find("\nGPU" + std::to_string(g) + " "), std::string::npos) << g;
}

TEST(TopGolden, NoGpu) {
    expect_golden("no-gpu", frame("no-gpu", {}));
}

TEST(TopGolden, ThrottledGpuNearOom) {
    expect_golden("throttled", frame("throttled", {}));
}

TEST(TopGolden, TreeModeInAscii) {
    expect_golden("tree-ascii", frame("one-idle", {"--tree", "--ascii"}));
}

TEST(TopGolden, EveryColumnButAge) {
    // AGE is left out: the fixture's start times are fixed, the clock is not.
    expect_golden("columns",
                  frame("throttled", {"--columns", "user,state,gpu,gmem,gmem_share,sm,cpu,rss,io,threads"}, 132, 24));
}

TEST(TopGolden, NearOomIsColouredAsAlarm) {
    std::string f = frame("throttled", {"--mark-styles"});
    // The GPU memory figure, its bar and the status line carry the alarm class; the busy GPU's
    // throttle flag (thermal slowdown) too.
    EXPECT_NE(f.find("{alarm}  45G/48G{/}"), std::string::npos) << f;
    EXPECT_NE(f.find("{alarm}███▊{/}"), std::string::npos) << f;  // the memory bar
    EXPECT_NE(f.find("{alarm}GPU0 memory 93 % (> 90 %){/}"), std::string::npos) << f;
    EXPECT_NE(f.find("{alarm}THR pwr-cap,sw-therm,hw-therm{/}"), std::string::npos) << f;
    EXPECT_NE(f.find("{elevated}PCIe 1x8/4x16{/}"), std::string::npos) << f;
    // An idle GPU's memory is below the best range: "low", not alarm.
    std::string idle = frame("one-idle", {"--mark-styles"});
    EXPECT_EQ(idle.find("{alarm}"), std::string::npos) << idle;
    EXPECT_NE(idle.find("{low}"), std::string::npos) << idle;
}

// Every line of `text` fits `w` columns.
void expect_fits(const std::string& text, int w, const std::string& what) {
    std::size_t start = 0;
    for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
        std::string line = text.substr(start, end - start);
        int cols = 0;
        for (unsigned char c : line) cols += (c & 0xC0) != 0x80;
        EXPECT_LE(cols, w) << what << ": " << line;
    }
}

TEST(TopGolden, EveryWidthAndHeightFits) {
    for (int w : {20, 40, 80, 132, 250})
        for (int h : {5, 10, 24, 60}) {
            std::string f = frame("eight-busy", {}, w, h);
            ASSERT_EQ(count_lines(f), h) << w << "x" << h;
            expect_fits(f, w, std::to_string(w) + "x" + std::to_string(h));
        }
}

// The same with history graphs and the expanded GPU panel: batch frames (the third has three
// samples of history), on the busiest scenario and the MIG one.
TEST(TopGolden, EverySizeFitsWithGraphsAndPanel) {
    for (const char* scenario : {"eight-busy", "mig"})
        for (int w : {20, 40, 80, 132, 250})
            for (int h : {5, 10, 24, 60}) {
                const std::string what = std::string(scenario) + " " + std::to_string(w) + "x" + std::to_string(h);
                TempDir d;
                d.write("baton.toml", "[sample]\nshm_path = \"\"\n");
                auto r = run({baton_binary(), "--config", d.path() + "/baton.toml", "top", "--count", "3", "-d", "0.1",
                              "--width", std::to_string(w), "--height", std::to_string(h), "--proc-root",
                              baton::test::fixture_dir() + "/machine/proc", "--sys-root",
                              baton::test::fixture_dir() + "/machine/sys"},
                             fake_env(scenario));
                ASSERT_EQ(r.exit_code, 0) << what << r.err;
                EXPECT_EQ(count_lines(r.out), 3 * h + 2) << what;  // three frames, a blank line between
                expect_fits(r.out, w, what);
            }
}

// The expanded GPU panel on every fake scenario a GPU answers in: a tall terminal shows it.
TEST(TopGolden, ExpandedPanelOnEveryScenario) {
    for (const char* scenario : {"one-idle", "throttled", "eight-busy", "mig", "two-pcie", "four-idle", "gpu-lost",
                                 "no-v3", "h200-recorded", "near-oom", "r535-records"})
        expect_golden(std::string("panel-") + scenario, frame(scenario, {}, 132, 80));
    // Absent means absent: no fan on the H100s, no NVLink on the PCIe A100s.
    const std::string mig = frame("mig", {}, 132, 60);
    EXPECT_EQ(mig.find("fan "), std::string::npos) << mig;
    EXPECT_NE(mig.find("3g.40gb"), std::string::npos) << mig;
    EXPECT_EQ(frame("two-pcie", {}, 132, 60).find("NVLink"), std::string::npos);
}
