// `baton run` while its command burns every core: the finding is printed live and again in the
// summary. Serial (in diagnose_live_test): the load would disturb other tests.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <csignal>
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

// Another user's processes burn every core while the run's own job sleeps: the finding names them
// and their user, says the job is not its main cause, and compare lists it apart from the run's
// effects (against a run on a quiet box, where the finding is "new").
TEST(RunLive, AnotherUsersLoadIsNamedAndNotTheRunsEffect) {
    TempDir d;
    d.write("baton.toml", "[thresholds]\nwindow_seconds = 3\n");
    const std::string db = d.path() + "/runs.db";
    auto baton_run = [&](const char* seconds) {
        return run({baton_binary(), "--config", d.path() + "/baton.toml", "run", "--no-gpus", "--interval", "0.25",
                    "--db", db, "--", "sleep", seconds},
                   {}, 60);
    };
    const CommandResult quiet = baton_run("2");
    ASSERT_EQ(quiet.exit_code, 0) << quiet.err;

    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const bool root = geteuid() == 0;
    const pid_t burner = fork();
    if (burner == 0) {
        setpgid(0, 0);
        if (root && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(126);  // nobody
        const std::string burn = "for i in $(seq " + std::to_string(cores) + "); do (while :; do :; done) & done; wait";
        execl("/bin/sh", "sh", "-c", burn.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    setpgid(burner, burner);
    const CommandResult busy = baton_run("6");
    kill(-burner, SIGKILL);
    waitpid(burner, nullptr, 0);
    ASSERT_EQ(busy.exit_code, 0) << busy.err;
    const std::size_t at = busy.err.find("cpu_load_high [host]");
    ASSERT_NE(at, std::string::npos) << busy.err;
    const std::string line = busy.err.substr(at, busy.err.find('\n', at) - at);
    EXPECT_NE(line.find("; most of it from sh (pid "), std::string::npos) << line;
    if (root) {
        EXPECT_NE(line.find(", nobody) "), std::string::npos) << line;
    }
    EXPECT_NE(line.find("; the run's job makes only 0 % of it: not its main cause"), std::string::npos) << line;

    const CommandResult text = run({baton_binary(), "compare", "1", "2", "--db", db});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    const std::size_t apart = text.out.find("on the host, from other processes (no effect of either run):\n");
    ASSERT_NE(apart, std::string::npos) << text.out;
    EXPECT_NE(text.out.find("cpu_load_high [host]: in the second run only, its job made 0 % of the load", apart),
              std::string::npos)
        << text.out;
    EXPECT_EQ(text.out.find("cpu_load_high [host]: new"), std::string::npos) << text.out;
    const CommandResult as_json = run({baton_binary(), "compare", "1", "2", "--db", db, "--json"});
    ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
    EXPECT_NE(as_json.out.find(R"("cause":"other processes")"), std::string::npos) << as_json.out;
}
