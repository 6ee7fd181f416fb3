// The supervisor of a queued job on real processes: it runs nothing without the agent's go, runs the
// command with its environment, directory, CPUs and logs, ends the whole tree on cancel (members
// that called setsid included) and what the command left behind when it ends, and writes how the
// job ended.
#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/files.hpp"
#include "queue/job_shim.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

// Starts the shim on `dir` in a child process (descriptor 3 is the go pipe); returns its pid and the
// pipe's write end.
pid_t start_shim(const std::string& dir, int& go) {
    int p[2];
    EXPECT_EQ(pipe(p), 0);
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(p[0], 3);
        if (p[0] != 3) close(p[0]);
        close(p[1]);
        _exit(run_job_shim(dir));
    }
    close(p[0]);
    go = p[1];
    return pid;
}

ShimSpec spec_for(const std::vector<std::string>& argv, const std::string& cwd) {
    ShimSpec s;
    s.job = 1;
    s.argv = argv;
    s.env = {"PATH=/usr/bin:/bin", "FOO=bar baz"};
    s.cwd = cwd;
    s.uid = geteuid();
    s.gid = getegid();
    s.user = "tester";
    s.end_grace_seconds = 0.5;
    return s;
}

ShimStatus run_to_end(const std::string& dir, const ShimSpec& spec, bool say_go = true) {
    EXPECT_TRUE(write_file_atomically(dir + "/spec", spec_json(spec)).ok());
    int go = -1;
    const pid_t pid = start_shim(dir, go);
    if (say_go) {
        EXPECT_EQ(write(go, "g", 1), 1);
    }
    close(go);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    Result<ShimStatus> st = parse_status_json(test::read_text(dir + "/status"));
    EXPECT_TRUE(st.ok());
    return st.ok() ? *st : ShimStatus{};
}

bool alive(pid_t pid) {
    // A zombie reparented to init counts as gone.
    const std::string stat = test::read_text("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t paren = stat.rfind(')');
    return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] != 'Z';
}

pid_t read_pid(const std::string& path, double seconds) {
    const double until = monotonic_seconds() + seconds;
    while (monotonic_seconds() < until) {
        const std::string text = test::read_text(path);
        if (!text.empty() && text.back() == '\n') return static_cast<pid_t>(std::stol(text));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
}

}  // namespace

TEST(QueueShim, SpecAndStatusRoundTrip) {
    ShimSpec s = spec_for({"python3", "caf\xe9.py", ""}, "/tmp");
    s.cpus = {0, 3};
    s.cgroup = "/sys/fs/cgroup/baton/job-1";
    Result<ShimSpec> back = parse_spec_json(spec_json(s));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->argv, s.argv);
    EXPECT_EQ(back->env, s.env);
    EXPECT_EQ(back->cpus, s.cpus);
    EXPECT_EQ(back->cgroup, s.cgroup);
    EXPECT_TRUE(back->owner_dirs.empty());
    s.owner_dirs = {"/j/1/attempt-0/stacks", "/j/1/attempt-0/stacks/fr"};
    EXPECT_EQ(parse_spec_json(spec_json(s))->owner_dirs, s.owner_dirs);
    ShimStatus st;
    st.started = true;
    st.exit_status = 137;
    st.signal = 9;
    st.cancelled = true;
    st.error = "x";
    Result<ShimStatus> sb = parse_status_json(status_json(st));
    ASSERT_TRUE(sb.ok());
    EXPECT_EQ(sb->exit_status, 137);
    EXPECT_EQ(sb->signal, 9);
    EXPECT_TRUE(sb->cancelled);
    EXPECT_FALSE(sb->no_go);
    ShimStatus never;
    never.no_go = true;
    EXPECT_TRUE(parse_status_json(status_json(never))->no_go);
    // A status of an older baton said "no go" in its error alone.
    EXPECT_TRUE(parse_status_json("{\"started\": false, \"exit_status\": 0, \"error\": \"the agent ended before the "
                                  "job could start\"}")
                    ->no_go);
    for (const char* bad : {"", "{}", "[]", "{\"started\": 1, \"exit_status\": 0}"})
        EXPECT_FALSE(parse_status_json(bad).ok());
    EXPECT_FALSE(parse_spec_json("{\"job\": 1}").ok());
}

TEST(QueueShim, WithoutTheAgentsGoNothingRuns) {
    test::TempDir dir;
    const ShimStatus st = run_to_end(dir.path(), spec_for({"touch", dir.path() + "/ran"}, dir.path()), false);
    EXPECT_FALSE(st.started);
    EXPECT_NE(st.error.find("agent ended"), std::string::npos);
    EXPECT_TRUE(st.no_go);
    EXPECT_NE(access((dir.path() + "/ran").c_str(), F_OK), 0);
}

TEST(QueueShim, RunsTheCommandWithItsEnvironmentDirectoryAndLogs) {
    test::TempDir dir, work;
    ShimSpec s = spec_for({"sh", "-c", "echo out; echo err >&2; pwd; echo \"$FOO\"; exit 7"}, work.path());
    s.cpus = {0};
    const ShimStatus st = run_to_end(dir.path(), s);
    EXPECT_TRUE(st.started);
    EXPECT_FALSE(st.cancelled);
    EXPECT_EQ(st.exit_status, 7);
    EXPECT_EQ(st.signal, 0);
    EXPECT_EQ(test::read_text(dir.path() + "/stdout"), "out\n" + work.path() + "\nbar baz\n");
    EXPECT_EQ(test::read_text(dir.path() + "/stderr"), "err\n");
}

TEST(QueueShim, MakesTheJobsDirectoriesBeforeTheCommandAndOnlyUnderItsOwn) {
    test::TempDir dir, work;
    ShimSpec s =
        spec_for({"sh", "-c", "test -d \"$1\" && test -d \"$1/fr\" && test -w \"$1/fr\"", "sh", dir.path() + "/stacks"},
                 work.path());
    s.owner_dirs = {dir.path() + "/stacks", dir.path() + "/stacks/fr", dir.path() + "/../escape",
                    work.path() + "/elsewhere", dir.path() + "/a//b"};
    const ShimStatus st = run_to_end(dir.path(), s);
    EXPECT_TRUE(st.started);
    EXPECT_EQ(st.exit_status, 0) << test::read_text(dir.path() + "/stderr");
    struct stat made {};
    ASSERT_EQ(lstat((dir.path() + "/stacks/fr").c_str(), &made), 0);
    EXPECT_EQ(made.st_mode & 0777, 0700u);
    EXPECT_NE(access((work.path() + "/elsewhere").c_str(), F_OK), 0);
    EXPECT_NE(access((work.path() + "/../escape").c_str(), F_OK), 0);
    // Those refused are said in the job's stderr, and the job ran all the same.
    const std::string err = test::read_text(dir.path() + "/stderr");
    EXPECT_NE(err.find("cannot make " + work.path() + "/elsewhere"), std::string::npos) << err;
    EXPECT_NE(err.find("/../escape"), std::string::npos) << err;
    EXPECT_TRUE(owner_dir_allowed("/j", "/j/a/b"));
    for (const char* bad : {"/j", "/j/", "/jx/a", "/j/./a", "/j/a/..", "/j//a", "/a"})
        EXPECT_FALSE(owner_dir_allowed("/j", bad)) << bad;
}

TEST(QueueShim, PinsTheCommandToItsCpus) {
    test::TempDir dir;
    ShimSpec s = spec_for({"sh", "-c", "grep Cpus_allowed_list /proc/self/status"}, dir.path());
    s.cpus = {0};
    EXPECT_EQ(run_to_end(dir.path(), s).exit_status, 0);
    EXPECT_NE(test::read_text(dir.path() + "/stdout").find("Cpus_allowed_list:\t0\n"), std::string::npos)
        << test::read_text(dir.path() + "/stdout");
}

TEST(QueueShim, ACommandThatCannotStartIsTold) {
    test::TempDir dir;
    ShimStatus st = run_to_end(dir.path(), spec_for({"/no/such/program"}, dir.path()));
    EXPECT_EQ(st.exit_status, 127);
    EXPECT_NE(st.error.find("cannot run /no/such/program"), std::string::npos) << st.error;
    st = run_to_end(dir.path(), spec_for({"true"}, "/no/such/dir"));
    EXPECT_EQ(st.exit_status, 126);
    EXPECT_NE(st.error.find("cannot enter /no/such/dir"), std::string::npos) << st.error;
}

TEST(QueueShim, CancelEndsTheWholeTreeEvenMembersThatCalledSetsid) {
    test::TempDir dir;
    // One member leaves the process group and the session; one ignores SIGTERM (it needs the SIGKILL).
    const std::string script = "setsid sh -c 'echo $$ > " + dir.path() +
                               "/escaped; exec sleep 300' & "
                               "sh -c 'trap \"\" TERM; echo $$ > " +
                               dir.path() + "/stubborn; while :; do sleep 0.1; done' & sleep 300";
    ASSERT_TRUE(
        write_file_atomically(dir.path() + "/spec", spec_json(spec_for({"sh", "-c", script}, dir.path()))).ok());
    int go = -1;
    const pid_t shim = start_shim(dir.path(), go);
    ASSERT_EQ(write(go, "g", 1), 1);
    close(go);
    const pid_t escaped = read_pid(dir.path() + "/escaped", 10), stubborn = read_pid(dir.path() + "/stubborn", 10);
    ASSERT_GT(escaped, 0);
    ASSERT_GT(stubborn, 0);
    EXPECT_NE(getsid(escaped), getsid(shim));
    sigval v{};
    v.sival_int = 500;  // the grace, in milliseconds
    const double t0 = monotonic_seconds();
    ASSERT_EQ(sigqueue(shim, SIGTERM, v), 0);
    int status = 0;
    waitpid(shim, &status, 0);
    EXPECT_LT(monotonic_seconds() - t0, 5);
    Result<ShimStatus> st = parse_status_json(test::read_text(dir.path() + "/status"));
    ASSERT_TRUE(st.ok());
    EXPECT_TRUE(st->cancelled);
    EXPECT_GE(st->killed_after_grace, 1);  // the one that ignored SIGTERM
    EXPECT_FALSE(alive(escaped));
    EXPECT_FALSE(alive(stubborn));
}

TEST(QueueShim, WhatTheCommandLeavesBehindEndsWithIt) {
    test::TempDir dir;
    // A daemonised child (double fork: its parent is gone, it is the shim's now) outlives the command.
    const std::string script = "(sleep 300 & echo $! > " + dir.path() + "/left) ; exit 0";
    const double t0 = monotonic_seconds();
    const ShimStatus st = run_to_end(dir.path(), spec_for({"sh", "-c", script}, dir.path()));
    EXPECT_LT(monotonic_seconds() - t0, 5);
    EXPECT_EQ(st.exit_status, 0);
    EXPECT_FALSE(st.cancelled);
    const pid_t left = read_pid(dir.path() + "/left", 1);
    ASSERT_GT(left, 0);
    EXPECT_FALSE(alive(left));
}

// On a fake cgroupfs (plain files): the command enters the job's cgroup, the supervisor does not
// (an OOM kill there takes every process in it, memory.oom.group), and the supervisor reads the
// cgroup's OOM kills when the job ends and writes them in its status.
TEST(QueueShim, TheSupervisorStaysOutOfTheJobsCgroupAndCountsItsOomKills) {
    test::TempDir dir, cg;
    cg.write("cgroup.procs", "");
    cg.write("memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n");
    ShimSpec s = spec_for({"sh", "-c", "echo $$; kill -KILL $$"}, dir.path());
    s.cgroup = cg.path();
    const ShimStatus st = run_to_end(dir.path(), s);
    EXPECT_TRUE(st.started);
    EXPECT_EQ(st.signal, SIGKILL);
    EXPECT_EQ(st.oom_kills, 1u);
    const std::string command_pid = test::read_text(dir.path() + "/stdout");
    ASSERT_FALSE(command_pid.empty());
    // Only the command wrote itself there (the fake file keeps what each writer wrote).
    EXPECT_EQ(test::read_text(cg.path() + "/cgroup.procs") + "\n", command_pid);
    EXPECT_EQ(test::read_text(dir.path() + "/stderr"), "");
    // Without OOM kills, or without a readable memory.events: 0.
    cg.write("memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
    EXPECT_EQ(cgroup_oom_kills(cg.path()), 0u);
    EXPECT_EQ(cgroup_oom_kills(cg.path() + "/nope"), 0u);
    cg.write("memory.events", "oom_kill 18446744073709551615999\n");  // hostile: no overflow
    EXPECT_LT(cgroup_oom_kills(cg.path()), 18446744073709551615ull);
}

// A cgroup the command cannot enter is said on the job's stderr; the job still runs.
TEST(QueueShim, ACgroupThatCannotBeEnteredIsSaid) {
    test::TempDir dir;
    ShimSpec s = spec_for({"sh", "-c", "echo ran"}, dir.path());
    s.cgroup = dir.path() + "/no-such-cgroup";
    const ShimStatus st = run_to_end(dir.path(), s);
    EXPECT_EQ(st.exit_status, 0);
    EXPECT_EQ(test::read_text(dir.path() + "/stdout"), "ran\n");
    EXPECT_NE(test::read_text(dir.path() + "/stderr").find("baton: cannot enter the cgroup of "), std::string::npos);
    EXPECT_EQ(st.oom_kills, 0u);
}
