// The on-end callbacks: the job's values quoted into the command (a name is any text), their
// environment, and the runner: a callback's output reaches the log, a non-zero exit is said, one past
// its timeout is killed with everything it started.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/clock.hpp"
#include "queue/job_callbacks.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

EndedJob ended() {
    EndedJob e;
    e.id = 12;
    e.name = "it's $(rm -rf /) `x` \"q\"";
    e.status = "failed";
    e.user = "ada";
    e.exit_status = 3;
    return e;
}

JobOwner me() {
    Result<JobOwner> o = job_owner(::geteuid());
    EXPECT_TRUE(o.ok());
    return o.ok() ? *o : JobOwner{};
}

}  // namespace

TEST(JobCallbacks, TheValuesAreQuotedIntoTheCommand) {
    EXPECT_EQ(callback_command("notify {id} {name} {status} {exit} {user} {other}", ended()),
              "notify '12' 'it'\\''s $(rm -rf /) `x` \"q\"' 'failed' '3' 'ada' {other}");
    EndedJob never = ended();
    never.exit_status.reset();
    EXPECT_EQ(callback_command("x{exit}y", never), "x''y");
    EXPECT_EQ(callback_command("", never), "");
    // What sh makes of it: the name as one word, untouched.
    test::TempDir d;
    test::CommandResult r = test::run({"/bin/sh", "-c", callback_command("printf '%s|' {name} {id}", ended())});
    EXPECT_EQ(r.out, ended().name + "|12|");
}

TEST(JobCallbacks, TheEnvironmentNamesTheJobAndTheOwner) {
    JobOwner o;
    o.name = "ada";
    o.home = "/home/ada";
    o.shell = "/bin/zsh";
    const std::vector<std::string> env = callback_environment(ended(), o);
    for (const std::string& kv :
         {std::string("BATON_JOB_ID=12"), std::string("BATON_JOB_STATUS=failed"), std::string("BATON_JOB_EXIT=3"),
          std::string("BATON_JOB_NAME=") + ended().name, std::string("HOME=/home/ada"), std::string("USER=ada"),
          std::string("SHELL=/bin/zsh")})
        EXPECT_NE(std::find(env.begin(), env.end(), kv), env.end()) << kv;
    EXPECT_EQ(env.front().rfind("PATH=", 0), 0u);
}

TEST(JobCallbacks, OutputGoesToTheLogAndOnePastItsTimeoutIsKilledWithItsChildren) {
    test::TempDir d;
    const std::string log = d.path() + "/log";
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    JobCallbacks cb;
    const JobOwner owner = me();
    ASSERT_TRUE(cb.start("echo said by $BATON_JOB_ID in $PWD", owner, callback_environment(ended(), owner), d.path(),
                         fd, 5, "the quick one")
                    .ok());
    ASSERT_TRUE(cb.start("exit 3", owner, {}, "/nonexistent", fd, 5, "the failing one").ok());
    const std::string pids = d.path() + "/pids";
    const std::string escaped = d.path() + "/escaped";
    ASSERT_TRUE(cb.start("sleep 60 & echo $! > " + pids + "; setsid sleep 61 & echo $! > " + escaped + "; sleep 60",
                         owner, {}, "", fd, 0.3, "the hanging one")
                    .ok());
    const double t0 = monotonic_seconds();
    while (cb.check(monotonic_seconds()) > 0 && monotonic_seconds() - t0 < 10)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(cb.check(monotonic_seconds()), 0u) << "the hanging one was not killed";
    EXPECT_LT(monotonic_seconds() - t0, 5.0);
    ::close(fd);
    const std::string text = test::read_text(log);
    EXPECT_NE(text.find("said by 12 in " + d.path() + "\n"), std::string::npos) << text;
    // The background child of the hanging one went with it (its process group).
    const pid_t child = static_cast<pid_t>(std::stol(test::read_text(pids)));
    // Gone, or a zombie its new parent has not reaped yet: polled until then, for at most 2 s.
    auto ended_within_2s = [](pid_t pid) {
        auto alive = [pid] {
            const std::string stat = test::read_text("/proc/" + std::to_string(pid) + "/stat");
            return !stat.empty() && stat.find(") Z ") == std::string::npos;
        };
        const double until = monotonic_seconds() + 2;
        while (alive() && monotonic_seconds() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return !alive();
    };
    EXPECT_TRUE(ended_within_2s(child)) << "pid " << child << " outlived its callback";
    // And the one that left its process group (setsid): found as a descendant, killed too.
    const pid_t gone = static_cast<pid_t>(std::stol(test::read_text(escaped)));
    if (!ended_within_2s(gone)) {
        ADD_FAILURE() << "pid " << gone << " (setsid) outlived its callback";
        ::kill(gone, SIGKILL);
    }
}

// An agent that is not root runs no other user's callback. (Tried from a child that dropped to
// nobody when the tests run as root, as in CI.)
TEST(JobCallbacks, AnotherUsersCallbackNeedsARootAgent) {
    auto refused = [] {
        JobOwner other;
        other.uid = ::geteuid() + 1;
        other.name = "someone";
        JobCallbacks cb;
        Status s = cb.start("true", other, {}, "", -1, 1, "x");
        return !s.ok() && s.error().message.find("the agent is not root") != std::string::npos;
    };
    if (::geteuid() != 0) {
        EXPECT_TRUE(refused());
        return;
    }
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) ::_exit(::setgid(65534) == 0 && ::setuid(65534) == 0 && refused() ? 0 : 1);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}
