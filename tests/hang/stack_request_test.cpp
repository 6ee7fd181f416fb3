// The stack handler in real Python processes (Debian's /usr/bin/python3): the shim registers it
// without a change to the script, the user's own sitecustomize and faulthandler handlers still work,
// a process is asked for its stacks and answers, and every process that must not be signalled
// (not Python, no handler, not started by baton, gone) is refused with one line.
#include "hang/stack_request.hpp"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "core/files.hpp"
#include "hang/stack_shim.hpp"
#include "test_support.hpp"

using baton::hang::find_stack_target;
using baton::hang::install_shim;
using baton::hang::main_thread;
using baton::hang::request_stacks;
using baton::hang::shim_environment;
using baton::hang::stack_targets_under;
using baton::hang::StackReply;
using baton::hang::StackTarget;

namespace {

// A process of the test's own, started with extra environment variables, ended by its pid.
class Started {
  public:
    Started(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env)
        : pid_(baton::test::start_process(argv, {env.begin(), env.end()})) {}
    ~Started() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    pid_t pid() const { return pid_; }
    bool alive() const { return waitpid(pid_, nullptr, WNOHANG) == 0; }

  private:
    pid_t pid_ = -1;
};

bool wait_for_file(const std::string& path, double seconds = 20) {
    return baton::test::eventually([&] { return std::filesystem::exists(path); }, seconds, 0.01);
}

// Until the forked child has become `program` (exec done): what /proc says of it before is the test's.
bool wait_for_exec(pid_t pid, const std::string& program) {
    return baton::test::eventually(
        [&] {
            std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
            std::string comm;
            return std::getline(f, comm) && comm == program;
        },
        10);
}

// A script that says it is ready (its first argument's file) and then blocks reading a pipe.
constexpr const char* kBlockedScript = R"PY(import os, sys
def blocked_in_read(fd):
    return os.read(fd, 1)
r, w = os.pipe()
open(sys.argv[1], "w").close()
blocked_in_read(r)
)PY";

struct ShimTree {
    baton::test::TempDir dir;
    std::string shim() const { return dir.path() + "/python"; }
    std::string stacks() const { return dir.path() + "/stacks"; }
    ShimTree() { EXPECT_TRUE(install_shim(shim(), stacks()).ok()); }
    std::vector<std::pair<std::string, std::string>> env(const std::optional<std::string>& path = std::nullopt) const {
        return shim_environment(shim(), stacks(), path);
    }
};

}  // namespace

TEST(StackRequest, APythonScriptUnderTheShimAnswersWithItsStacks) {
    ShimTree t;
    t.dir.write("script.py", kBlockedScript);
    const std::string ready = t.dir.path() + "/ready";
    Started p({"/usr/bin/python3", t.dir.path() + "/script.py", ready}, t.env());
    ASSERT_TRUE(wait_for_file(ready));
    baton::Result<StackTarget> target = find_stack_target(p.pid());
    ASSERT_TRUE(target.ok()) << target.error().message;
    EXPECT_EQ(target->rank, std::nullopt);
    EXPECT_EQ(target->file, t.stacks() + "/" + std::to_string(p.pid()) + ".txt");
    for (int round = 0; round < 3; ++round) {  // the file is emptied to its header each time
        const std::vector<StackReply> replies = request_stacks({*target}, 5);
        ASSERT_EQ(replies.size(), 1u);
        ASSERT_EQ(replies[0].error, "");
        const baton::hang::PyThreadStack* m = main_thread(replies[0].threads);
        ASSERT_NE(m, nullptr);
        ASSERT_EQ(m->frames.size(), 2u) << "blocked_in_read under <module>, and nothing left from the last dump";
        EXPECT_EQ(m->frames[0].function, "blocked_in_read");
        EXPECT_EQ(m->frames[0].line, 3u);
        EXPECT_EQ(m->frames[1].function, "<module>");
        EXPECT_EQ(m->frames[1].file, t.dir.path() + "/script.py");
        EXPECT_FALSE(replies[0].partial);
        EXPECT_LT(replies[0].seconds, 1.0);
    }
    EXPECT_TRUE(p.alive()) << "the signal dumped the stacks and did not end the process";
}

TEST(StackRequest, TheSignalNeverInterruptsTheScriptsSystemCalls) {
    // libc's poll() called directly (Python's own calls retry on EINTR, a C library's may not: torch
    // 1.13's TCPStore fails with "Interrupted system call"): the dump must not wake it.
    ShimTree t;
    t.dir.write("script.py", R"PY(import ctypes, os, sys
class PollFd(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("events", ctypes.c_short), ("revents", ctypes.c_short)]
libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe()
fds = (PollFd * 1)(PollFd(r, 1, 0))
open(sys.argv[1], "w").close()
ret = libc.poll(fds, 1, 1500)
open(sys.argv[2], "w").write("%d %d" % (ret, ctypes.get_errno()))
)PY");
    const std::string ready = t.dir.path() + "/ready", result = t.dir.path() + "/result";
    Started p({"/usr/bin/python3", t.dir.path() + "/script.py", ready, result}, t.env());
    ASSERT_TRUE(wait_for_file(ready));
    baton::Result<StackTarget> target = find_stack_target(p.pid());
    ASSERT_TRUE(target.ok()) << target.error().message;
    for (int i = 0; i < 3; ++i) {
        const std::vector<StackReply> replies = request_stacks({*target}, 5);
        ASSERT_EQ(replies[0].error, "");
        const baton::hang::PyThreadStack* m = main_thread(replies[0].threads);
        ASSERT_NE(m, nullptr);
        EXPECT_EQ(m->frames.front().function, "<module>");
        for (const baton::hang::PyThreadStack& th : replies[0].threads)
            EXPECT_NE(th.frames.empty() ? "" : th.frames.front().function, "_baton_signal_thread")
                << "the shim's own thread is not shown";
    }
    ASSERT_TRUE(wait_for_file(result, 10));
    baton::test::eventually([&] { return baton::test::read_text(result).size() >= 3; }, 5);  // both numbers written
    EXPECT_EQ(baton::test::read_text(result), "0 0") << "poll() timed out as asked, it was not interrupted (EINTR 4)";
}

TEST(StackRequest, DumpsOfThreadsThatRunNeverCrashTheProcess) {
    // Two threads pushing and popping frames as fast as they can while they are dumped again and
    // again: a dump from a signal handler of another thread reads their frames as they change (a rank
    // died of SIGSEGV that way in CI); the shim's dump holds the GIL, so they stand still meanwhile.
    ShimTree t;
    // Each function is compiled, run and freed at once, under a file name of its own: a dump that
    // reads a frame as it goes reads a freed code object (the old design died of SIGSEGV here).
    t.dir.write("script.py", R"PY(import sys, threading, time
def churn(until, tag):
    i = 0
    while time.time() < until:
        i += 1
        src = "def f%d(n):\n    return n if n < 1 else f%d(n - 1)\nr = f%d(30)\n" % (i, i, i)
        exec(compile(src, "/tmp/gen_%s_%d.py" % (tag, i), "exec"), {})
until = time.time() + 4
threading.Thread(target=churn, args=(until, "t")).start()
open(sys.argv[1], "w").close()
churn(until, "m")
)PY");
    const std::string ready = t.dir.path() + "/ready";
    Started p({"/usr/bin/python3", t.dir.path() + "/script.py", ready}, t.env());
    ASSERT_TRUE(wait_for_file(ready));
    baton::Result<StackTarget> target = find_stack_target(p.pid());
    ASSERT_TRUE(target.ok()) << target.error().message;
    int answered = 0;
    for (int i = 0; i < 60; ++i)
        if (request_stacks({*target}, 2)[0].error.empty()) ++answered;
    int status = -1;
    ASSERT_EQ(waitpid(p.pid(), &status, 0), p.pid());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the script ended on its own, not by a signal (" << status << ")";
    EXPECT_GE(answered, 20);
}

TEST(StackRequest, TheUsersSitecustomizeAndFaulthandlerKeepWorking) {
    ShimTree t;
    // The user's own sitecustomize, on their PYTHONPATH: it must still run.
    t.dir.write("user/sitecustomize.py", "import os\nopen(os.environ['USER_MARK'], 'w').write('ran')\n");
    // A script with its own faulthandler on SIGUSR1, to a file of its own.
    t.dir.write("script.py", std::string("import faulthandler, signal, sys\n"
                                         "own = open(sys.argv[2], 'w')\n"
                                         "faulthandler.register(signal.SIGUSR1, file=own, all_threads=True)\n") +
                                 kBlockedScript);
    const std::string ready = t.dir.path() + "/ready", mark = t.dir.path() + "/mark", own = t.dir.path() + "/own";
    auto env = t.env(t.dir.path() + "/user");
    env.emplace_back("USER_MARK", mark);
    Started p({"/usr/bin/python3", t.dir.path() + "/script.py", ready, own}, env);
    ASSERT_TRUE(wait_for_file(ready));
    EXPECT_EQ(baton::test::read_text(mark), "ran") << "the user's sitecustomize ran after the shim";
    baton::Result<StackTarget> target = find_stack_target(p.pid());
    ASSERT_TRUE(target.ok()) << target.error().message;
    const std::vector<StackReply> replies = request_stacks({*target}, 5);
    ASSERT_EQ(replies[0].error, "");
    EXPECT_EQ(baton::test::read_text(own), "") << "baton's signal is not the user's";
    ASSERT_EQ(kill(p.pid(), SIGUSR1), 0);
    for (int i = 0; i < 200 && baton::test::read_text(own).find("blocked_in_read") == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_NE(baton::test::read_text(own).find("blocked_in_read"), std::string::npos)
        << "the user's own handler still dumps to the user's file";
    EXPECT_TRUE(p.alive());
}

TEST(StackRequest, ANestedShimChainsToTheUsersSitecustomizeOnce) {
    ShimTree outer, inner;
    outer.dir.write("user/sitecustomize.py", "import os\nopen(os.environ['USER_MARK'], 'a').write('ran ')\n");
    const std::string mark = outer.dir.path() + "/mark";
    // baton run inside baton launch: the inner shim first, then the outer one, then the user's.
    auto env = inner.env(outer.shim() + ":" + outer.dir.path() + "/user");
    env.emplace_back("USER_MARK", mark);
    const baton::test::CommandResult r = baton::test::run(
        {"/usr/bin/python3", "-c", "import sys; print(sorted(m for m in sys.modules if 'baton' in m))"},
        {env.begin(), env.end()}, 30);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(baton::test::read_text(mark), "ran ") << "the user's sitecustomize ran once";
    EXPECT_EQ(r.out, "['_baton_stacks']\n");
}

TEST(StackRequest, ProcessesThatMustNotBeSignalledAreRefusedInOneLine) {
    ShimTree t;
    // Not Python, though started with the handler's variables.
    {
        Started p({"/bin/sleep", "30"}, t.env());
        ASSERT_TRUE(wait_for_exec(p.pid(), "sleep"));
        baton::Result<StackTarget> r = find_stack_target(p.pid());
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("is not a Python process"), std::string::npos) << r.error().message;
        EXPECT_TRUE(p.alive());
    }
    // Python that skipped PYTHONPATH (-E): no handler file, never signalled.
    {
        t.dir.write("script.py", kBlockedScript);
        const std::string ready = t.dir.path() + "/ready-e";
        Started p({"/usr/bin/python3", "-E", t.dir.path() + "/script.py", ready}, t.env());
        ASSERT_TRUE(wait_for_file(ready));
        baton::Result<StackTarget> r = find_stack_target(p.pid());
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("has no stack handler: its Python ignored PYTHONPATH"), std::string::npos)
            << r.error().message;
        EXPECT_TRUE(p.alive());
    }
    // Not started by baton at all.
    {
        Started p({"/bin/sleep", "30"}, {});
        ASSERT_TRUE(wait_for_exec(p.pid(), "sleep"));
        baton::Result<StackTarget> r = find_stack_target(p.pid());
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("was not started by baton run or baton launch"), std::string::npos)
            << r.error().message;
    }
    // Gone.
    pid_t gone = 0;
    {
        Started p({"/bin/true"}, {});
        gone = p.pid();
        waitpid(gone, nullptr, 0);
    }
    baton::Result<StackTarget> r = find_stack_target(gone);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.is(baton::ErrorCode::not_found)) << r.error().message;
    EXPECT_EQ(r.error().message, "no process " + std::to_string(gone));
    // Another user's: only when this test does not run as root (root may ask anyone's).
    if (geteuid() != 0) {
        baton::Result<StackTarget> init = find_stack_target(1);
        ASSERT_FALSE(init.ok());
        EXPECT_TRUE(init.is(baton::ErrorCode::permission_denied)) << init.error().message;
    }
}

TEST(StackRequest, AStaleFileOfAnotherProcessIsNeverTrusted) {
    ShimTree t;
    t.dir.write("script.py", kBlockedScript);
    const std::string ready = t.dir.path() + "/ready";
    Started p({"/usr/bin/python3", t.dir.path() + "/script.py", ready}, t.env());
    ASSERT_TRUE(wait_for_file(ready));
    const std::string file = t.stacks() + "/" + std::to_string(p.pid()) + ".txt";
    const std::string header = baton::test::read_text(file);
    ASSERT_FALSE(header.empty());
    // The same pid, another start time (a reused pid): refused, not signalled.
    std::string stale = header;
    const std::size_t start = stale.find(" start ") + 7;
    stale.replace(start, stale.find(' ', start) - start, "1");
    ASSERT_TRUE(baton::write_file_atomically(file, stale).ok());
    baton::Result<StackTarget> r = find_stack_target(p.pid());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("has no stack handler"), std::string::npos);
    EXPECT_TRUE(p.alive());
}

TEST(StackRequest, TheTargetsUnderARootAreItsRanks) {
    ShimTree t;
    // A parent with no RANK (as torchrun's agent) and two ranks below it.
    t.dir.write("parent.py", R"PY(import os, subprocess, sys, time
kids = [subprocess.Popen([sys.executable, sys.argv[1], sys.argv[2] + str(r)], env=dict(os.environ, RANK=str(r)))
        for r in (1, 0)]
while not all(os.path.exists(sys.argv[2] + str(r)) for r in (0, 1)):
    time.sleep(0.01)
open(sys.argv[2], "w").close()
time.sleep(60)
)PY");
    t.dir.write("script.py", kBlockedScript);
    const std::string ready = t.dir.path() + "/ready";
    Started p({"/usr/bin/python3", t.dir.path() + "/parent.py", t.dir.path() + "/script.py", ready}, t.env());
    ASSERT_TRUE(wait_for_file(ready));
    std::vector<StackTarget> ranks = stack_targets_under(p.pid(), true);
    ASSERT_EQ(ranks.size(), 2u);
    EXPECT_EQ(ranks[0].rank, 0);
    EXPECT_EQ(ranks[1].rank, 1);
    EXPECT_EQ(ranks[0].ppid, p.pid());
    EXPECT_EQ(stack_targets_under(p.pid(), false).size(), 3u) << "--all: the parent too";
    const std::vector<StackReply> replies = request_stacks(ranks, 5);
    for (const StackReply& r : replies) EXPECT_EQ(r.error, "") << r.target.pid;
    for (const StackTarget& r : ranks) kill(r.pid, SIGKILL);
}
