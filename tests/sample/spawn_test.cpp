// Starting a process: a failure after the fork comes back as an Error with the shell's status and
// the child reaped; the child's group or session, environment, descriptors, directory and signal
// mask are as asked; a child that must die with its parent does, even when the parent is SIGKILLed.
#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sample/linux/spawn.hpp"
#include "test_support.hpp"

using namespace baton;

namespace {

// The child's exit status once it ended.
int status_of(pid_t pid) {
    int st = 0;
    if (::waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool no_children_left() {
    return ::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD;
}

}  // namespace

TEST(Spawn, FailuresAfterTheForkAreErrorsWithTheShellsStatus) {
    test::TempDir dir;
    os::SpawnSpec s;
    s.argv = {"/no/such/program"};
    Result<pid_t> r = os::spawn(s);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.error().is(ErrorCode::not_found));
    EXPECT_EQ(os::spawn_failure_status(r.error()), 127);
    EXPECT_NE(r.error().message.find("cannot run /no/such/program: "), std::string::npos) << r.error().message;
    EXPECT_TRUE(no_children_left()) << "the failed child is reaped";

    dir.write("not-executable", "#!/bin/sh\n");
    s.argv = {dir.path() + "/not-executable"};
    r = os::spawn(s);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.error().is(ErrorCode::not_executable));
    EXPECT_EQ(os::spawn_failure_status(r.error()), 126);

    s.argv = {"true"};
    s.cwd = dir.path() + "/gone";
    r = os::spawn(s);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message.rfind("cannot enter " + dir.path() + "/gone: ", 0), 0u) << r.error().message;
    EXPECT_EQ(os::spawn_failure_status(r.error()), 126);
    EXPECT_TRUE(no_children_left());

    s.cwd_or_root = true;
    s.argv = {"sh", "-c", "pwd > " + dir.path() + "/where"};
    r = os::spawn(s);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(status_of(*r), 0);
    EXPECT_EQ(test::read_text(dir.path() + "/where"), "/\n") << "a directory that cannot be entered: /";

    EXPECT_EQ(os::spawn_failure_status(make_error("cannot fork: x")), 0) << "nothing was started";
    s.argv.clear();
    EXPECT_FALSE(os::spawn(s).ok());
}

TEST(Spawn, GroupSessionEnvironmentDescriptorsAndMask) {
    test::TempDir dir;
    const int out = ::open((dir.path() + "/out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(out, 0);
    os::SpawnSpec s;
    s.argv = {"sh", "-c", "echo \"$ONLY ${HOME:-nohome}\"; cat; echo err >&2; exec sleep 300"};
    s.env = std::vector<std::string>{"ONLY=this", "PATH=/usr/bin:/bin"};
    s.stdin_fd = os::kDevNull;
    s.stdout_fd = s.stderr_fd = out;
    s.cwd = dir.path();
    Result<pid_t> r = os::spawn(s);
    ::close(out);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(::getpgid(*r), *r) << "a process group of its own";
    EXPECT_NE(::getsid(*r), *r);
    ASSERT_TRUE(
        test::eventually([&] { return test::read_text(dir.path() + "/out").find("err\n") != std::string::npos; }, 10));
    const std::string text = test::read_text(dir.path() + "/out");
    EXPECT_EQ(text.rfind("this nohome\n", 0), 0u) << "the given environment alone: " << text;
    ::kill(-*r, SIGKILL);
    status_of(*r);

    os::SpawnSpec session;
    session.argv = {"sleep", "300"};
    session.new_session = true;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    session.mask = usr1;
    r = os::spawn(session);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(::getsid(*r), *r) << "a session of its own";
    // SIGUSR1 is signal 10: bit 9 of the blocked mask. (A shell would set its own.)
    const std::string status = test::read_text("/proc/" + std::to_string(*r) + "/status");
    EXPECT_NE(status.find("SigBlk:\t0000000000000200\n"), std::string::npos) << status;
    ::kill(*r, SIGKILL);
    status_of(*r);
}

// An intermediate process spawns a child that must die with it, says its pid, and is SIGKILLed: the
// child goes too.
TEST(Spawn, AChildThatMustDieWithItsParentDoes) {
    test::TempDir dir;
    const std::string file = dir.path() + "/child";
    const pid_t parent = ::fork();
    ASSERT_GE(parent, 0);
    if (parent == 0) {
        os::SpawnSpec s;
        s.argv = {"sleep", "300"};
        s.die_with_parent = true;
        Result<pid_t> r = os::spawn(s);
        if (!r.ok()) ::_exit(1);
        std::ofstream(file + ".tmp") << *r << "\n";
        ::rename((file + ".tmp").c_str(), file.c_str());
        ::pause();
        ::_exit(0);
    }
    pid_t child = 0;
    ASSERT_TRUE(test::eventually([&] { return static_cast<bool>(std::ifstream(file) >> child); }, 10));
    EXPECT_EQ(::kill(child, 0), 0);
    ::kill(parent, SIGKILL);
    ::waitpid(parent, nullptr, 0);
    // (the child is reparented to init, or to a subreaper, which reaps it)
    EXPECT_TRUE(test::eventually(
        [&] {
            const std::string stat = test::read_text("/proc/" + std::to_string(child) + "/stat");
            return stat.empty() || stat.find(") Z ") != std::string::npos;
        },
        10))
        << "the child died with its parent";
}
