// `baton run -- CMD`: exit codes, signals forwarded to the command's group, the grace period,
// nothing of the tree left behind, the command dying with a killed baton, findings while it runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "store/history.hpp"
#include "test_support.hpp"

using namespace baton::test;

namespace {

// baton started in the background, its stderr going to a file.
struct Baton {
    pid_t pid = -1;
    std::string err_path;

    Baton(const TempDir& d, const std::vector<std::string>& args) {
        err_path = d.path() + "/stderr.txt";
        pid = fork();
        if (pid == 0) {
            const int devnull = open("/dev/null", O_RDWR);
            const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(err, 2);
            // The history goes to the test's directory, never to the user's state directory.
            std::vector<std::string> all{baton_binary(), "--config",  "/dev/null",
                                         "run",          "--no-gpus", "--interval",
                                         "0.2",          "--db",      d.path() + "/baton.db"};
            all.insert(all.end(), args.begin(), args.end());
            std::vector<char*> argv;
            for (auto& a : all) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            _exit(127);
        }
    }
    // Waits for baton to exit; returns its exit code (-signal when killed), or -1000 on timeout.
    int wait(double timeout = 30) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
        while (std::chrono::steady_clock::now() < end) {
            int st = 0;
            if (waitpid(pid, &st, WNOHANG) == pid) {
                pid = -1;
                return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
            }
            usleep(20000);
        }
        return -1000;
    }
    std::string err() const { return read_text(err_path); }
    ~Baton() {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
    }
};

bool wait_for_file(const std::string& path, double seconds = 10) {
    for (int i = 0; i < seconds * 50; ++i) {
        if (access(path.c_str(), F_OK) == 0 && !read_text(path).empty()) return true;
        usleep(20000);
    }
    return false;
}

bool gone(pid_t pid, double seconds = 5) {
    for (int i = 0; i < seconds * 50; ++i) {
        if (kill(pid, 0) != 0) return true;
        usleep(20000);
    }
    return false;
}

pid_t pid_in(const std::string& path) {
    return static_cast<pid_t>(std::stol(read_text(path)));
}

}  // namespace

TEST(RunCommand, ExitCodesPassThrough) {
    TempDir d;
    Baton three(d, {"--", "sh", "-c", "exit 3"});
    EXPECT_EQ(three.wait(), 3);
    EXPECT_NE(three.err().find("baton run: sh -c exit 3 exited with 3"), std::string::npos) << three.err();
    Baton segv(d, {"--", "sh", "-c", "kill -SEGV $$"});
    EXPECT_EQ(segv.wait(), 128 + SIGSEGV);
    EXPECT_NE(segv.err().find("was killed by signal 11"), std::string::npos) << segv.err();
    Baton missing(d, {"--", "/nonexistent/trainer"});
    EXPECT_EQ(missing.wait(), 127);
}

TEST(RunCommand, InterruptIsForwardedToTheCommand) {
    TempDir d;
    const std::string mark = d.path() + "/got-int";
    const std::string ready = d.path() + "/ready";
    Baton b(d, {"--", "sh", "-c",
                "trap 'echo INT > " + mark + "; exit 0' INT; echo up > " + ready + "; while :; do sleep 0.1; done"});
    ASSERT_TRUE(wait_for_file(ready));
    kill(b.pid, SIGINT);
    EXPECT_EQ(b.wait(), 0);  // the command's own exit status after handling SIGINT
    EXPECT_TRUE(wait_for_file(mark, 1)) << "the command never saw SIGINT";
}

TEST(RunCommand, IgnoredTerminationEndsWithSigkillAfterTheGrace) {
    TempDir d;
    const std::string ready = d.path() + "/ready";
    Baton b(d,
            {"--grace", "1", "--", "sh", "-c", "trap '' TERM; echo up > " + ready + "; while :; do sleep 0.1; done"});
    ASSERT_TRUE(wait_for_file(ready));
    const auto t0 = std::chrono::steady_clock::now();
    kill(b.pid, SIGTERM);
    EXPECT_EQ(b.wait(), 128 + SIGKILL);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(took, 0.9);
    EXPECT_LT(took, 5.0);
    EXPECT_NE(b.err().find("needed SIGKILL"), std::string::npos) << b.err();
}

TEST(RunCommand, NothingOfTheTreeRemains) {
    TempDir d;
    const std::string worker = d.path() + "/worker-pid";
    // The command starts a worker in the background (in its own process group, like a
    // daemonising DataLoader worker would not, to make it hard) and exits at once.
    Baton b(d, {"--", "sh", "-c", "setsid sleep 300 & echo $! > " + worker + "; exit 0"});
    EXPECT_EQ(b.wait(), 0);
    ASSERT_TRUE(wait_for_file(worker));
    EXPECT_TRUE(gone(pid_in(worker))) << "the orphaned worker outlived baton run";
}

TEST(RunCommand, CommandDiesWithAKilledBatonAndTheRunIsInterrupted) {
    TempDir d;
    const std::string child = d.path() + "/child-pid";
    Baton b(d, {"--", "sh", "-c", "echo $$ > " + child + "; exec sleep 300"});
    ASSERT_TRUE(wait_for_file(child));
    usleep(600000);  // a few samples recorded
    kill(b.pid, SIGKILL);
    EXPECT_EQ(b.wait(), -SIGKILL);
    EXPECT_TRUE(gone(pid_in(child))) << "the command became an invisible orphan";
    // The database opens cleanly and shows the run as interrupted, with its samples.
    auto r = run({baton_binary(), "runs", "--db", d.path() + "/baton.db", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\"state\":\"interrupted\""), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("\"samples\":0"), std::string::npos) << r.out;
}

TEST(RunCommand, FinishedRunIsRecorded) {
    TempDir d;
    Baton b(d, {"--name", "exp-7", "--", "sh", "-c", "sleep 0.5; exit 5"});
    EXPECT_EQ(b.wait(), 5);
    EXPECT_NE(b.err().find("recorded as run 1 in " + d.path() + "/baton.db"), std::string::npos) << b.err();
    auto r = run({baton_binary(), "runs", "--db", d.path() + "/baton.db"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("finished"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("exp-7"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("     5  "), std::string::npos) << r.out;  // the exit status column
}

TEST(RunCommand, CudaOutOfMemoryIsRecognisedAndPassedThrough) {
    TempDir d;
    const std::string oom =
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.15 GiB of which 1.19 GiB is free.";
    Baton b(d, {"--", "sh", "-c", "echo 'Traceback (most recent call last):' >&2; echo '" + oom + "' >&2; exit 1"});
    EXPECT_EQ(b.wait(), 1);
    const std::string err = b.err();
    EXPECT_NE(err.find("Traceback (most recent call last):\n" + oom + "\n"), std::string::npos) << err;  // unchanged
    EXPECT_NE(err.find("critical cuda_oom [job]"), std::string::npos) << err;
    EXPECT_NE(err.find("see: docs/findings.md#cuda_oom"), std::string::npos) << err;
}

TEST(RunCommand, ReportAsHtmlAndMarkdown) {
    TempDir d;
    Baton b(d, {"--name", "rep", "--report", d.path() + "/end.html", "--", "sh", "-c", "sleep 0.6"});
    ASSERT_EQ(b.wait(), 0);
    EXPECT_NE(b.err().find("  report: " + d.path() + "/end.html\n"), std::string::npos) << b.err();
    const std::string db = d.path() + "/baton.db";
    const std::string end = read_text(d.path() + "/end.html");
    EXPECT_EQ(end.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NE(end.find("<title>baton run 1: rep</title>"), std::string::npos);
    // The same page from `baton report`, to a file or to stdout.
    auto to_file = run({baton_binary(), "report", "1", "--db", db, "--html", d.path() + "/again.html"});
    ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
    EXPECT_EQ(to_file.err, "baton report: run 1 written to " + d.path() + "/again.html\n");
    EXPECT_EQ(read_text(d.path() + "/again.html"), end);
    auto to_stdout = run({baton_binary(), "report", "1", "--db", db, "--html", "-"});
    EXPECT_EQ(to_stdout.out, end);
    auto md = run({baton_binary(), "report", "1", "--db", db, "--markdown"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_EQ(md.out.rfind("# Run 1: rep\n", 0), 0u) << md.out;
    EXPECT_NE(md.out.find("\n## Over time\n"), std::string::npos);
    // Bad input: one line on stderr, nothing half-written.
    auto missing = run({baton_binary(), "report", "9", "--db", db, "--markdown"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_EQ(missing.err, "baton: no run 9 in the history\n");
    auto unwritable = run({baton_binary(), "report", "1", "--db", db, "--html", d.path() + "/no/such/dir/r.html"});
    EXPECT_EQ(unwritable.exit_code, 1);
    EXPECT_NE(unwritable.err.find("cannot write " + d.path() + "/no/such/dir/r.html: No such file or directory"),
              std::string::npos)
        << unwritable.err;
    EXPECT_EQ(run({baton_binary(), "report", "1", "--db", db, "--markdown", "--html", "x.html"}).exit_code, 2);
    EXPECT_EQ(run({baton_binary(), "report", "--db", db}).exit_code, 2);  // no run id
    // A mistyped database is an error, and no empty database is left behind.
    for (const char* cmd : {"report", "runs", "compare"}) {
        std::vector<std::string> args{baton_binary(), cmd};
        if (std::string(cmd) != "runs") args.push_back("1");
        if (std::string(cmd) == "compare") args.push_back("1");
        args.insert(args.end(), {"--db", d.path() + "/typo.db"});
        auto typo = run(args);
        EXPECT_EQ(typo.exit_code, 1) << cmd;
        EXPECT_EQ(typo.err, "baton: no history at " + d.path() + "/typo.db (baton run records runs there)\n") << cmd;
    }
    EXPECT_FALSE(std::filesystem::exists(d.path() + "/typo.db"));
    auto no_db = run({baton_binary(), "run", "--no-db", "--report", d.path() + "/x.html", "--", "true"});
    EXPECT_EQ(no_db.exit_code, 2);
    EXPECT_NE(no_db.err.find("--report is made from the run's history; drop --no-db"), std::string::npos) << no_db.err;
    EXPECT_FALSE(std::filesystem::exists(d.path() + "/x.html"));
}

TEST(RunCommand, HistoryPathFromTheConfig) {
    TempDir d;
    d.write("baton.toml", "[history]\ndb = \"" + d.path() + "/from-config.db\"\n");
    const std::string cfg = d.path() + "/baton.toml";
    auto ran = run({baton_binary(), "--config", cfg, "run", "--no-gpus", "--name", "cfg-run", "--", "true"});
    ASSERT_EQ(ran.exit_code, 0) << ran.err;
    EXPECT_NE(ran.err.find("recorded as run 1 in " + d.path() + "/from-config.db"), std::string::npos) << ran.err;
    // runs, report and compare read the same file; --db still wins.
    auto listed = run({baton_binary(), "--config", cfg, "runs"});
    EXPECT_NE(listed.out.find("cfg-run"), std::string::npos) << listed.out << listed.err;
    EXPECT_EQ(run({baton_binary(), "--config", cfg, "report", "1", "--markdown"}).exit_code, 0);
    EXPECT_EQ(run({baton_binary(), "--config", cfg, "compare", "1", "1"}).exit_code, 0);
    auto other = run({baton_binary(), "--config", cfg, "runs", "--db", d.path() + "/other.db"});
    EXPECT_EQ(other.out.find("cfg-run"), std::string::npos) << other.out;
    // A bad config is one line and exit 1.
    d.write("bad.toml", "[history]\ndb = \"\"\n");
    auto bad = run({baton_binary(), "--config", d.path() + "/bad.toml", "runs"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_EQ(bad.err, "baton: " + d.path() + "/bad.toml:2: 'history.db' must be a path, not empty\n");
}

TEST(RunCommand, RunsShowExportPrune) {
    TempDir d;
    Baton b(d, {"--name", "exp-8", "--", "sh", "-c", "sleep 0.7"});
    ASSERT_EQ(b.wait(), 0);
    const std::string db = d.path() + "/baton.db";
    auto show = run({baton_binary(), "runs", "show", "1", "--db", db});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    EXPECT_NE(show.out.find("exp-8"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("command: sh -c sleep 0.7"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("baton run: exp-8 exited with 0"), std::string::npos) << show.out;  // the stored summary
    auto listed = run({baton_binary(), "runs", "--db", db, "--json"});
    const std::size_t at = listed.out.find("\"samples\":");
    ASSERT_NE(at, std::string::npos);
    const int samples = std::stoi(listed.out.substr(at + 10));
    ASSERT_GT(samples, 1);
    auto jsonl = run({baton_binary(), "runs", "export", "1", "--db", db});
    ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
    EXPECT_EQ(std::count(jsonl.out.begin(), jsonl.out.end(), '\n'), samples);
    EXPECT_NE(jsonl.out.find("\"job_cpu_percent\":"), std::string::npos);
    auto csv = run({baton_binary(), "runs", "export", "1", "--format", "csv", "--db", db});
    EXPECT_EQ(csv.out.rfind("time,cpu_percent,iowait_percent,memory_used_gib,swap_mb_per_second,job_cpu_percent,"
                            "job_rss_gib,disk_read_mb_per_second,disk_write_mb_per_second\n",
                            0),
              0u)
        << csv.out;
    EXPECT_NE(jsonl.out.find("\"disk_write_mb_per_second\":"), std::string::npos);
    EXPECT_NE(show.out.find("\nmachine: "), std::string::npos) << show.out;  // CPUs, memory, GPUs
    EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), samples + 1);
    EXPECT_EQ(run({baton_binary(), "runs", "show", "9", "--db", db}).exit_code, 1);  // no such run
    EXPECT_EQ(run({baton_binary(), "runs", "export", "1", "--format", "xml", "--db", db}).exit_code, 2);
    auto keep = run({baton_binary(), "runs", "prune", "--older-than", "30d", "--db", db});
    EXPECT_EQ(keep.out, "pruned 0 runs\n");
    usleep(1100000);
    auto drop = run({baton_binary(), "runs", "prune", "--older-than", "1s", "--db", db});
    EXPECT_EQ(drop.out, "pruned 1 run\n");
    EXPECT_EQ(run({baton_binary(), "runs", "prune", "--older-than", "soon", "--db", db}).exit_code, 2);
}

TEST(RunCommand, CompareTwoRuns) {
    TempDir d;
    Baton first(d, {"--name", "baseline", "--", "sh", "-c", "sleep 0.6"});
    ASSERT_EQ(first.wait(), 0);
    Baton second(d, {"--name", "bigger-batch", "--", "sh", "-c",
                     "sleep 0.6; echo 'torch.OutOfMemoryError: CUDA out of memory.' >&2; exit 1"});
    ASSERT_EQ(second.wait(), 1);
    const std::string db = d.path() + "/baton.db";
    auto r = run({baton_binary(), "compare", "1", "2", "--db", db});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("baseline"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("bigger-batch"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("finished 1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("new in run 2: cuda_oom [job]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("duration"), std::string::npos) << r.out;
    auto missing = run({baton_binary(), "compare", "1", "7", "--db", db});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("no run 7"), std::string::npos) << missing.err;
    EXPECT_EQ(r.out.find("throughput"), std::string::npos) << r.out;  // no hook, no throughput row
    // With the hook's steps (as baton run stores them): throughput, step time and data wait compared.
    {
        auto h = baton::History::open(db);
        ASSERT_TRUE(h.ok());
        for (std::int64_t run_id : {1, 2}) {
            std::vector<baton::StepEvent> steps;
            for (int i = 0; i < 10; ++i) {
                baton::StepEvent e;
                e.t_ms = 1000 + i;
                e.step = i;
                e.step_ms = run_id == 1 ? 100 : 50;  // run 2 twice as fast
                e.wait_ms = run_id == 1 ? 40 : 5;
                e.samples = 32;
                steps.push_back(e);
            }
            ASSERT_TRUE(h->add_steps(run_id, steps).ok());
        }
    }
    r = run({baton_binary(), "compare", "1", "2", "--db", db});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("throughput                   320.0 /s       640.0 /s   +320.0 /s (+100 %)"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("step time median             100.0 ms        50.0 ms   -50.0 ms (-50 %)"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("data wait                      40.0 %         10.0 %   -30.0 pt"), std::string::npos)
        << r.out;
}
