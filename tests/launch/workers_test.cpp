// The local worker group with real processes: sessions, environment, exit statuses, start failures,
// and the teardown (SIGTERM, grace, SIGKILL, the bounded last wait).
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "launch/workers.hpp"
#include "sample/linux/tree_end.hpp"

using namespace baton;
using namespace baton::launch;
using namespace baton::run;

namespace {

std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    const double until = monotonic_seconds() + 10;
    while (monotonic_seconds() < until) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            out.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0) {
            break;
        } else if (errno == EAGAIN) {
            sleep_seconds(0.005);
        } else {
            break;
        }
    }
    return out;
}

void wait_all(WorkerGroup& g) {
    const double until = monotonic_seconds() + 10;
    while (!g.all_exited() && monotonic_seconds() < until) {
        g.poll();
        sleep_seconds(0.005);
    }
}

}  // namespace

TEST(Workers, EachInItsOwnSessionWithItsEnvironmentAndExitStatus) {
    std::vector<WorkerSpec> specs;
    for (int i = 0; i < 3; ++i)
        specs.push_back({{"/bin/sh", "-c", "echo \"$RANK $(cut -d' ' -f6 /proc/$$/stat)\"; echo err >&2; exit $RANK"},
                         {{"RANK", std::to_string(i)}}});
    specs.push_back({{"/bin/sh", "-c", "kill -SEGV $$"}, {}});
    Result<WorkerGroup> g = WorkerGroup::start(specs);
    ASSERT_TRUE(g.ok()) << g.error().message;
    for (int i = 0; i < 3; ++i) {
        const Worker& w = g->workers()[static_cast<std::size_t>(i)];
        // "RANK SESSION": the session is the worker itself.
        EXPECT_EQ(read_all(w.stdout_fd), std::to_string(i) + " " + std::to_string(w.pid) + "\n");
        EXPECT_EQ(read_all(w.stderr_fd), "err\n");
    }
    wait_all(*g);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(g->workers()[static_cast<std::size_t>(i)].exit_status, i);
    EXPECT_EQ(g->workers()[3].signal, SIGSEGV);
    EXPECT_EQ(g->workers()[3].exit_status, 128 + SIGSEGV);
}

TEST(Workers, AProgramThatCannotStartEndsTheOthers) {
    Result<WorkerGroup> g =
        WorkerGroup::start({{{"/bin/sleep", "30"}, {}}, {{"/no/such/program", "x"}, {}}, {{"/bin/sleep", "30"}, {}}});
    ASSERT_FALSE(g.ok());
    EXPECT_TRUE(g.is(ErrorCode::not_found)) << "the launcher's exit 127";
    EXPECT_NE(g.error().message.find("cannot run /no/such/program"), std::string::npos) << g.error().message;
    // The sleep started first is gone (reaped: no child of this process is left).
    sleep_seconds(0.05);
    EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);

    // There but not executable (a plain file): the launcher's exit 126.
    Result<WorkerGroup> plain = WorkerGroup::start({{{"/etc/passwd"}, {}}});
    ASSERT_FALSE(plain.ok());
    EXPECT_TRUE(plain.is(ErrorCode::not_executable)) << plain.error().message;
}

TEST(Workers, TeardownKillsWhatIgnoresSigtermAfterTheGrace) {
    os::become_subreaper();  // as the launcher: the shell's sleep comes back here to be reaped
    Result<WorkerGroup> g =
        WorkerGroup::start({{{"/bin/sh", "-c", "trap '' TERM; sleep 30 & wait"}, {}}, {{"/bin/sleep", "30"}, {}}});
    ASSERT_TRUE(g.ok());
    sleep_seconds(0.2);  // the traps are set
    const double t0 = monotonic_seconds();
    const TeardownReport r = g->end(0.5, 2);
    const double took = monotonic_seconds() - t0;
    EXPECT_GE(took, 0.5);
    EXPECT_LT(took, 2.0);
    EXPECT_EQ(r.killed, 1);  // the shell's group (it and its sleep), once
    EXPECT_TRUE(r.stuck.empty());
    EXPECT_TRUE(g->all_exited());
    EXPECT_EQ(g->workers()[0].signal, SIGKILL);
    EXPECT_EQ(g->workers()[1].signal, SIGTERM);
    EXPECT_EQ(kill(-g->workers()[0].pid, 0), -1);  // nothing of the group is left
}

TEST(Workers, OrphansOfAWorkerEndWithTheGroup) {
    // The worker leaves a grandchild in a session of its own (out of the worker's group) and exits:
    // the launcher, as subreaper, inherits it and ends it.
    os::become_subreaper();
    Result<WorkerGroup> g = WorkerGroup::start(
        {{{"/bin/sh", "-c", "setsid /bin/sleep 30 </dev/null >/dev/null 2>&1 & echo $!; exit 0"}, {}}});
    ASSERT_TRUE(g.ok());
    const pid_t orphan = static_cast<pid_t>(std::stol(read_all(g->workers()[0].stdout_fd)));
    wait_all(*g);
    EXPECT_EQ(kill(orphan, 0), 0);
    const TeardownReport r = g->end(0.2, 2);
    EXPECT_TRUE(r.stuck.empty());
    EXPECT_EQ(kill(orphan, 0), -1);  // ended and reaped
}

TEST(Workers, AProcessThatCannotDieIsReportedNotWaitedFor) {
    // A task frozen by the cgroup v1 freezer cannot act on SIGKILL until thawed: it stays, in state
    // D, as a rank stuck in a driver call does.
    const std::string freezer = "/sys/fs/cgroup/freezer";
    if (geteuid() != 0 || access((freezer + "/cgroup.procs").c_str(), W_OK) != 0)
        GTEST_SKIP() << "needs root and the cgroup v1 freezer";
    const std::string cg = freezer + "/baton-test-" + std::to_string(getpid());
    ASSERT_EQ(mkdir(cg.c_str(), 0755), 0);
    auto write = [](const std::string& path, const std::string& text) {
        FILE* f = std::fopen(path.c_str(), "w");
        if (!f) return false;
        const bool ok = std::fputs(text.c_str(), f) >= 0;
        return std::fclose(f) == 0 && ok;
    };
    os::become_subreaper();
    Result<WorkerGroup> g = WorkerGroup::start({{{"/bin/sleep", "30"}, {}}});
    ASSERT_TRUE(g.ok());
    const pid_t pid = g->workers()[0].pid;
    ASSERT_TRUE(write(cg + "/cgroup.procs", std::to_string(pid)));
    ASSERT_TRUE(write(cg + "/freezer.state", "FROZEN"));
    sleep_seconds(0.2);
    const double t0 = monotonic_seconds();
    const TeardownReport r = g->end(0.2, 0.5);
    const double took = monotonic_seconds() - t0;
    write(cg + "/freezer.state", "THAWED");  // now SIGKILL lands
    wait_all(*g);
    rmdir(cg.c_str());
    EXPECT_LT(took, 2.0);  // bounded: grace + last wait, not forever
    ASSERT_EQ(r.stuck.size(), 1u);
    EXPECT_EQ(r.stuck[0].pid, pid);
    EXPECT_EQ(r.stuck[0].state, 'D');
    EXPECT_EQ(r.stuck[0].name, "sleep");
    EXPECT_TRUE(g->all_exited());
}
