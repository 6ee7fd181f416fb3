// `baton diagnose` live on this machine: children that burn every core, then children that write
// and fsync, and the findings they must cause (cpu_load_high, io_wait_high). Run serially: other
// tests' load would blur the picture.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <set>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.hpp"

using namespace baton::test;
using nlohmann::json;

namespace {

// Children running `body` until killed; killed and reaped on destruction.
struct Children {
    std::vector<pid_t> pids;
    Children(int n, void (*body)(int)) {
        for (int i = 0; i < n; ++i) {
            pid_t c = fork();
            if (c == 0) {
                body(i);
                _exit(0);
            }
            pids.push_back(c);
        }
    }
    ~Children() {
        for (pid_t p : pids) kill(p, SIGKILL);
        for (pid_t p : pids) waitpid(p, nullptr, 0);
    }
};

void burn(int) {
    volatile unsigned long x = 0;
    for (;;) {
        const unsigned long next = x + 1;
        x = next;
    }
}

// Small writes, each made durable: the writer spends its time waiting for the disk. The file is
// in the working directory (the build tree), not /tmp, which may be a tmpfs where fsync is free.
void write_and_fsync(int i) {
    const std::string path = "diagnose-live-fsync-" + std::to_string(getppid()) + "-" + std::to_string(i);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    unlink(path.c_str());  // removed when the child dies, however it dies
    char block[4096] = {};
    for (;;) {
        if (pwrite(fd, block, sizeof block, 0) < 0) _exit(1);
        fsync(fd);
    }
}

std::set<std::string> rules(const std::string& out) {
    std::set<std::string> r;
    const json doc = json::parse(out);  // kept alive: the loop walks into it
    for (const json& f : doc["findings"]) r.insert(f["rule"].get<std::string>());
    return r;
}

// A 4 s window (sustained = 3.2 s) so the test takes seconds, not the default 30.
CommandResult diagnose_live(const TempDir& d) {
    d.write("baton.toml", "[thresholds]\nwindow_seconds = 4\n");
    return run({baton_binary(), "--config", d.path() + "/baton.toml", "diagnose", "--duration", "5s", "--interval",
                "0.5", "--no-gpus", "--json"});
}

}  // namespace

TEST(DiagnoseLive, BusyCoresGiveCpuLoadHigh) {
    TempDir d;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    Children burners(static_cast<int>(cores), burn);
    auto r = diagnose_live(d);
    ASSERT_EQ(r.exit_code, 1) << r.out << r.err;  // a warning
    auto found = rules(r.out);
    EXPECT_TRUE(found.count("cpu_load_high")) << r.out;
}

TEST(DiagnoseLive, FsyncingWritersGiveIoWaitHigh) {
    TempDir d;
    Children writers(2, write_and_fsync);
    auto r = diagnose_live(d);
    ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
    auto found = rules(r.out);
    EXPECT_TRUE(found.count("io_wait_high")) << r.out;
    EXPECT_FALSE(found.count("cpu_load_high")) << r.out;
}
