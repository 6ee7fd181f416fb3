// baton top under load: 1,000 processes, a third of them killed while it runs. Every frame is
// whole, and the processes that lived throughout are in every frame (no flicker).
#include <gtest/gtest.h>

#include <cctype>
#include <csignal>
#include <filesystem>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "test_support.hpp"

using namespace baton::test;

TEST(TopLoad, ThousandProcessesWithChurn) {
    std::vector<pid_t> kids;
    for (int i = 0; i < 1000; ++i) {
        pid_t c = fork();
        if (c == 0) {
            pause();
            _exit(0);
        }
        ASSERT_GT(c, 0);
        kids.push_back(c);
    }
    // Every process fits a frame, however many others the box runs (sorted by pid, a frame cut at
    // its height would drop the newest: this test's own children).
    int others = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc"))
        others += std::isdigit(static_cast<unsigned char>(e.path().filename().string()[0])) ? 1 : 0;
    const int height = 1000 + others + 500;
    // Kill every third child while baton top runs (it prints 12 frames, 0.15 s apart).
    std::thread churn([&] {
        usleep(400000);
        for (std::size_t i = 0; i < kids.size(); i += 3) {
            kill(kids[i], SIGKILL);
            waitpid(kids[i], nullptr, 0);
            if (i % 30 == 0) usleep(20000);
        }
    });
    auto r = run({baton_binary(), "top", "--count", "12", "-d", "0.15", "--sort", "pid", "--width", "160", "--height",
                  std::to_string(height), "--no-gpus"},
                 {{"TERM", "xterm"}});
    churn.join();
    for (std::size_t i = 0; i < kids.size(); ++i) {
        if (i % 3 == 0) continue;
        kill(kids[i], SIGKILL);
        waitpid(kids[i], nullptr, 0);
    }
    ASSERT_EQ(r.exit_code, 0) << r.err;

    // Frames are separated by an empty line; each has `height` lines (trailing blanks trimmed).
    std::vector<std::set<pid_t>> frames(1);
    std::istringstream in(r.out);
    std::string line;
    int lines_in_frame = 0;
    std::vector<int> frame_lines;
    while (std::getline(in, line)) {
        if (lines_in_frame == height) {  // the separator
            EXPECT_TRUE(line.empty());
            frames.emplace_back();
            frame_lines.push_back(lines_in_frame);
            lines_in_frame = 0;
            continue;
        }
        ++lines_in_frame;
        std::istringstream row(line);
        long pid = 0;
        std::string user, gpu, gmem, sm, cpu, rss, io, command;
        if (!(row >> pid >> user >> gpu >> gmem >> sm >> cpu >> rss >> io >> command)) continue;  // not a process row
        EXPECT_FALSE(command.empty()) << line;
        frames.back().insert(static_cast<pid_t>(pid));
    }
    frame_lines.push_back(lines_in_frame);
    ASSERT_EQ(frames.size(), 12u);
    for (int n : frame_lines) EXPECT_EQ(n, height);
    for (std::size_t f = 0; f < frames.size(); ++f) {
        int missing = 0;
        for (std::size_t i = 0; i < kids.size(); ++i)
            if (i % 3 != 0 && !frames[f].count(kids[i])) ++missing;
        EXPECT_EQ(missing, 0) << "frame " << f << " lost living processes";
    }
    // And the killed ones are gone by the end.
    int ghosts = 0;
    for (std::size_t i = 0; i < kids.size(); i += 3) ghosts += frames.back().count(kids[i]) ? 1 : 0;
    EXPECT_EQ(ghosts, 0);
}

// Batch mode at -d 0.5: the priming read is followed by a full delay, so every frame's rates cover
// half a second (the second frame used to cover almost none: a busy process read 30 %, 0 %, 30 %).
TEST(TopLoad, BatchFramesAreAFullDelayApart) {
    const pid_t busy = fork();
    if (busy == 0) {
        execlp("sh", "sh", "-c", "while :; do :; done", static_cast<char*>(nullptr));
        _exit(127);
    }
    ASSERT_GT(busy, 0);
    auto r = run({baton_binary(), "top", "--count", "4", "-d", "0.5", "--filter", std::to_string(busy), "--no-gpus",
                  "--width", "120", "--height", "40"},
                 {{"TERM", "xterm"}});
    kill(busy, SIGKILL);
    waitpid(busy, nullptr, 0);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_GE(r.seconds, 1.9);  // priming 0.5 s, then three full delays
    std::vector<double> cpu;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string pid, user, gpu, gmem, sm, cpu_text;
        if (!(words >> pid >> user >> gpu >> gmem >> sm >> cpu_text) || pid != std::to_string(busy)) continue;
        cpu.push_back(std::stod(cpu_text));
    }
    ASSERT_EQ(cpu.size(), 4u) << r.out;
    for (double c : cpu) {
        EXPECT_GT(c, 40) << r.out;  // one busy core, on a box running other tests
        EXPECT_LT(c, 115) << r.out;
    }
}
