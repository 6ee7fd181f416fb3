// Running a program to its end with a deadline, on real programs, and the CPUs this process may
// use: input in, stdout and stderr
// apart, the exit status the shell's way, a program that is not there, one that outlives its
// deadline, and one that exits without reading its input.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <thread>

#include "core/allowed_cpus.hpp"
#include "core/clock.hpp"
#include "core/run_program.hpp"

using namespace baton;

TEST(RunProgram, OutputApartAndTheExitStatus) {
    Result<ProgramOutput> r = run_program({"/bin/sh", "-c", "cat; echo oops >&2; exit 3"}, "hello\n", 10);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->out, "hello\n");
    EXPECT_EQ(r->err, "oops\n");
    EXPECT_EQ(r->exit_status, 3);
    EXPECT_FALSE(r->timed_out);
    r = run_program({"/bin/sh", "-c", "kill -TERM $$"}, "", 10);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_status, 128 + 15);
}

TEST(RunProgram, NotThereIs127WithWhy) {
    Result<ProgramOutput> r = run_program({"/nonexistent/program"}, "", 10);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_status, 127);
    EXPECT_NE(r->err.find("cannot run /nonexistent/program: No such file or directory"), std::string::npos) << r->err;
    EXPECT_FALSE(run_program({}, "", 10).ok());
}

TEST(RunProgram, KilledPastItsDeadline) {
    const double start = monotonic_seconds();
    Result<ProgramOutput> r = run_program({"/bin/sleep", "30"}, "", 0.3);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->timed_out);
    EXPECT_EQ(r->exit_status, 128 + 9);
    EXPECT_LT(monotonic_seconds() - start, 5);
}

TEST(RunProgram, AProgramThatDoesNotReadItsInput) {
    // 4 MiB it never reads: no SIGPIPE here, no hang.
    Result<ProgramOutput> r = run_program({"/bin/true"}, std::string(4u << 20, 'x'), 10);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_status, 0);
}

TEST(AllowedCpus, AscendingAndAsTheKernelSays) {
    const std::vector<unsigned> cpus = allowed_cpus();
    ASSERT_FALSE(cpus.empty());
    EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    EXPECT_EQ(cpus.size(), static_cast<std::size_t>(CPU_COUNT(&set)));
    // A narrower affinity is what it gives (a thread of our own, so the test's others keep theirs).
    std::vector<unsigned> narrowed;
    std::thread([&] {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus.back(), &one);
        if (sched_setaffinity(0, sizeof one, &one) == 0) narrowed = allowed_cpus();
    }).join();
    EXPECT_EQ(narrowed, std::vector<unsigned>{cpus.back()});
}
