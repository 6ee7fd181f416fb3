// Signals and renices by pid and start time: a process whose start time differs from the one
// given (the pid reused by another) is left alone; the right one is reached; a gone one is ESRCH.
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sample/linux/pid_signal.hpp"

using namespace baton;

namespace {

pid_t sleeper() {
    const pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sleep", "sleep", "30", nullptr);
        _exit(127);
    }
    return pid;
}

bool exited_within(pid_t pid, double seconds, int* status) {
    for (int i = 0; i < static_cast<int>(seconds * 100); ++i) {
        if (waitpid(pid, status, WNOHANG) == pid) return true;
        usleep(10000);
    }
    return false;
}

}  // namespace

TEST(PidSignal, OnlyTheProcessThatStartedThenIsSignalled) {
    const pid_t pid = sleeper();
    const std::uint64_t start = os::process_start_ticks(pid);
    ASSERT_GT(start, 0u);
    // Another start time: another process under the same pid.
    EXPECT_EQ(os::signal_process(pid, start + 1, SIGTERM), ESRCH);
    int status = 0;
    EXPECT_FALSE(exited_within(pid, 0.2, &status)) << "a process with another start time was signalled";
    EXPECT_EQ(os::signal_process(pid, start, SIGTERM), 0);
    ASSERT_TRUE(exited_within(pid, 5, &status));
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    // Reaped: gone, whatever the start time.
    EXPECT_EQ(os::signal_process(pid, start, SIGKILL), ESRCH);
    EXPECT_EQ(os::process_start_ticks(pid), 0u);
    EXPECT_EQ(os::signal_process(0, 0, SIGKILL), ESRCH);
    EXPECT_EQ(os::signal_process(-1, 0, SIGKILL), ESRCH);  // never "every process"
}

TEST(PidSignal, ReniceChecksTheStartTimeToo) {
    const pid_t pid = sleeper();
    const std::uint64_t start = os::process_start_ticks(pid);
    ASSERT_GT(start, 0u);
    errno = 0;
    const int before = getpriority(PRIO_PROCESS, static_cast<id_t>(pid));
    EXPECT_EQ(os::renice_process(pid, start + 7, 15, "/proc"), ESRCH);
    EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(pid)), before);
    EXPECT_EQ(os::renice_process(pid, start, 15, "/proc"), 0);
    EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(pid)), 15);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_EQ(os::renice_process(pid, start, 10, "/proc"), ESRCH);
}
