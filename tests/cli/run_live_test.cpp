// `baton run` while its command burns every core: the finding is printed live and again in the
// summary. Serial (in diagnose_live_test): the load would disturb other tests.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.hpp"

using namespace baton::test;

TEST(RunLive, FindingsAppearWhileItRuns) {
    TempDir d;
    d.write("baton.toml", "[thresholds]\nwindow_seconds = 3\n");
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    std::string burn =
        "for i in $(seq " + std::to_string(cores) + "); do (while :; do :; done) & done; sleep 6; kill 0";
    pid_t pid = fork();
    if (pid == 0) {
        const int devnull = open("/dev/null", O_RDWR);
        const int err = open((d.path() + "/stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(err, 2);
        execl(baton_binary().c_str(), baton_binary().c_str(), "--config", (d.path() + "/baton.toml").c_str(), "run",
              "--no-gpus", "--interval", "0.25", "--no-db", "--", "sh", "-c", burn.c_str(),
              static_cast<char*>(nullptr));
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    const std::string err = read_text(d.path() + "/stderr.txt");
    EXPECT_NE(err.find("baton: warning cpu_load_high [host]"), std::string::npos) << err;  // live
    EXPECT_NE(err.find("  warning cpu_load_high [host]"), std::string::npos) << err;       // in the summary
    EXPECT_NE(err.find("job: CPU avg"), std::string::npos) << err;
}
