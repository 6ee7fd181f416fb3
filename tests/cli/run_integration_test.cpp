// `baton run -- CMD`: exit codes, signals forwarded to the command's group, the grace period,
// nothing of the tree left behind, the command dying with a killed baton, findings while it runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "store/history.hpp"
#include "store/history_runs.hpp"
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
    EXPECT_NE(missing.err().find("cannot run /nonexistent/trainer: No such file or directory"), std::string::npos)
        << missing.err();
    // There, but not a program (no execute bit, even for root): as a shell says it, 126.
    Baton plain(d, {"--", "/etc/passwd"});
    EXPECT_EQ(plain.wait(), 126);
    EXPECT_NE(plain.err().find("cannot run /etc/passwd: Permission denied"), std::string::npos) << plain.err();
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
    // Once samples are recorded.
    ASSERT_TRUE(eventually(
        [&] {
            const auto r = run({baton_binary(), "runs", "--db", d.path() + "/baton.db", "--json"});
            return r.out.find("\"samples\":") != std::string::npos && r.out.find("\"samples\":0") == std::string::npos;
        },
        20, 0.1));
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
    EXPECT_NE(err.find("see: baton explain cuda_oom"), std::string::npos) << err;
}

// An out-of-memory failure while another user's process holds most of the GPU: the finding names
// that process from NVML's view and says the fix is not the batch size; the figures are recorded.
TEST(RunCommand, CudaOomExplainedByAnotherProcessOnTheGpu) {
    TempDir d;
    const std::string db = d.path() + "/baton.db";
    const std::string procs = d.path() + "/gpu-processes";
    auto env = fake_env("one-idle");
    env["CUDA_VISIBLE_DEVICES"] = "0";
    env["BATON_FAKE_NVML_PROCESSES"] = procs;
    pid_t other = -1;
    {
        std::FILE* p = popen("sleep 30 >/dev/null 2>&1 & echo $!", "r");
        ASSERT_NE(p, nullptr);
        ASSERT_EQ(std::fscanf(p, "%d", &other), 1);
        pclose(p);
    }
    { std::ofstream(procs) << "0 " << other << " 60000000000\n"; }
    const std::string oom =
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
        "capacity of 79.65 GiB of which 1.19 GiB is free. Process " +
        std::to_string(other) +
        " has 55.88 GiB memory in use. Including non-PyTorch memory, this process has 18.63 GiB "
        "memory in use. Of the allocated memory 17.50 GiB is allocated by PyTorch, and 100.00 MiB "
        "is reserved by PyTorch but unallocated.";
    auto r = run({baton_binary(), "--config", "/dev/null", "run", "--interval", "0.2", "--db", db, "--", "sh", "-c",
                  "echo \"0 $$ 20000000000\" >> " + procs + "; sleep 1; echo '" + oom + "' >&2; exit 1"},
                 env);
    kill(other, SIGKILL);
    ASSERT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(oom + "\n"), std::string::npos) << r.err;  // passed through unchanged
    EXPECT_NE(r.err.find("critical cuda_oom [job]: GPU0 ran out of memory: 4.00 GiB asked with 1.19 GiB free; other "
                         "processes held 55.88 GiB of it (55.88 GiB by pid " +
                         std::to_string(other) + " (sleep"),
              std::string::npos)
        << r.err;
    auto shown = nlohmann::json::parse(run({baton_binary(), "runs", "show", "1", "--json", "--db", db}).out);
    bool found = false;
    for (const auto& f : shown["finding_list"]) {
        if (f["rule"] != "cuda_oom") continue;
        found = true;
        EXPECT_NE(f["recommendation"].get<std::string>().find("not the batch size"), std::string::npos) << f;
        std::map<std::string, double> figures;
        for (const auto& e : f["evidence"])
            if (e.contains("maximum")) figures[e["metric"].get<std::string>()] = e["maximum"].get<double>();
        EXPECT_EQ(figures["oom.requested_bytes"], 4.0 * 1073741824) << f;
        EXPECT_EQ(figures["oom.other_processes_bytes"], 60000000000.0) << f;
    }
    EXPECT_TRUE(found) << shown;
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
    EXPECT_NE(show.out.find("\nmachine: "), std::string::npos) << show.out;                     // CPUs, memory, GPUs
    // --json is honoured wherever it is given: show prints one object (it printed text before).
    auto show_json = run({baton_binary(), "runs", "show", "1", "--json", "--db", db});
    ASSERT_EQ(show_json.exit_code, 0) << show_json.err;
    const auto shown = nlohmann::json::parse(show_json.out);
    EXPECT_EQ(shown["name"], "exp-8");
    EXPECT_TRUE(shown["finding_list"].is_array());
    EXPECT_NE(shown["summary"].get<std::string>().find("exited with 0"), std::string::npos);
    EXPECT_GT(shown["cpu_count"].get<int>(), 0);
    auto listed = run({baton_binary(), "runs", "--db", db, "--json"});
    const int samples = nlohmann::json::parse(listed.out)["samples"].get<int>();
    ASSERT_GT(samples, 1);
    // Export: every stored field, in base units (bytes, bytes per second), like the snapshot JSON.
    auto jsonl = run({baton_binary(), "runs", "export", "1", "--db", db});
    ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
    EXPECT_EQ(std::count(jsonl.out.begin(), jsonl.out.end(), '\n'), samples);
    const auto first = nlohmann::json::parse(jsonl.out.substr(0, jsonl.out.find('\n')));
    for (const char* key :
         {"time", "cpu_percent", "iowait_percent", "memory_used_bytes", "swap_bytes_per_second", "job_cpu_percent",
          "job_rss_bytes", "disk_read_bytes_per_second", "disk_write_bytes_per_second", "gpus"})
        EXPECT_TRUE(first.contains(key)) << key << " in " << first;
    EXPECT_GT(first["memory_used_bytes"].get<double>(), 1e6);  // bytes, not GiB
    auto csv = run({baton_binary(), "runs", "export", "1", "--format", "csv", "--db", db});
    EXPECT_EQ(csv.out.rfind("time,cpu_percent,iowait_percent,memory_used_bytes,swap_bytes_per_second,job_cpu_percent,"
                            "job_rss_bytes,disk_read_bytes_per_second,disk_write_bytes_per_second\n",
                            0),
              0u)
        << csv.out;
    EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), samples + 1);
    EXPECT_EQ(run({baton_binary(), "runs", "export", "1", "--json", "--db", db}).out, jsonl.out);
    EXPECT_EQ(run({baton_binary(), "runs", "export", "1", "--json", "--format", "csv", "--db", db}).exit_code, 2);
    // The hook's steps, in seconds.
    {
        auto h = baton::store::History::open(db);
        ASSERT_TRUE(h.ok());
        baton::store::StepEvent e;
        e.t_ms = 1000;
        e.pid = 42;
        e.step = 7;
        e.step_ms = 250;
        e.wait_ms = 50;
        e.samples = 32;
        e.data = R"({"cuda":{"allocated_bytes":1024}})";
        ASSERT_TRUE(h->run_writes().add_step(1, e).ok());
    }
    auto steps = run({baton_binary(), "runs", "export", "1", "--steps", "--db", db});
    ASSERT_EQ(steps.exit_code, 0) << steps.err;
    const auto step = nlohmann::json::parse(steps.out);
    EXPECT_EQ(step["step"], 7);
    EXPECT_DOUBLE_EQ(step["step_seconds"].get<double>(), 0.25);
    EXPECT_DOUBLE_EQ(step["data_wait_seconds"].get<double>(), 0.05);
    EXPECT_EQ(step["data"]["cuda"]["allocated_bytes"], 1024);
    auto steps_csv = run({baton_binary(), "runs", "export", "1", "--steps", "--format", "csv", "--db", db});
    EXPECT_EQ(
        steps_csv.out,
        "time,pid,rank,step,step_seconds,data_wait_seconds,samples\n1970-01-01T00:00:01.000Z,42,0,7,0.25,0.05,32\n");
    // Run ids: a missing one and one that is not a number are named.
    auto nine = run({baton_binary(), "runs", "show", "9", "--db", db});
    EXPECT_EQ(nine.exit_code, 1);
    EXPECT_NE(nine.err.find("no run 9"), std::string::npos) << nine.err;
    for (const char* cmd : {"show", "export"}) {
        auto abc = run({baton_binary(), "runs", cmd, "abc", "--db", db});
        EXPECT_EQ(abc.exit_code, 1);
        EXPECT_EQ(abc.err, "baton: no run 'abc' (baton runs lists the runs)\n");
    }
    auto report = run({baton_binary(), "report", "abc", "--db", db});
    EXPECT_EQ(report.err, "baton: no run 'abc' (baton runs lists the runs)\n");
    EXPECT_EQ(run({baton_binary(), "runs", "export", "1", "--format", "xml", "--db", db}).exit_code, 2);
    // Prune: --dry-run deletes nothing; a real prune gives the space back.
    {
        auto h = baton::store::History::open(db);
        ASSERT_TRUE(h.ok());
        baton::store::RunSample s;
        s.gpus.resize(4);
        for (int i = 0; i < 20000; ++i) {
            s.t_ms = 1000 + i;
            ASSERT_TRUE(h->run_writes().add_sample(1, s).ok());
        }
    }
    auto keep = run({baton_binary(), "runs", "prune", "--older-than", "30d", "--db", db});
    EXPECT_EQ(keep.out, "pruned 0 runs\n");
    usleep(1100000);
    auto dry = run({baton_binary(), "runs", "prune", "--older-than", "1s", "--dry-run", "--db", db});
    EXPECT_EQ(dry.out, "would prune 1 run: 1\n");
    EXPECT_EQ(run({baton_binary(), "runs", "show", "1", "--db", db}).exit_code, 0);  // still there
    auto dry_json = run({baton_binary(), "runs", "prune", "--older-than", "1s", "--dry-run", "--json", "--db", db});
    EXPECT_EQ(dry_json.out, "{\"dry_run\":true,\"runs\":[1]}\n");
    const auto size_before = std::filesystem::file_size(db);
    auto drop = run({baton_binary(), "runs", "prune", "--older-than", "1s", "--json", "--db", db});
    ASSERT_EQ(drop.exit_code, 0) << drop.err;
    const auto pruned = nlohmann::json::parse(drop.out);
    EXPECT_EQ(pruned["runs"], nlohmann::json::array({1}));
    EXPECT_GT(pruned["bytes_freed"].get<std::int64_t>(), 500000) << drop.out;  // 20,000 samples went
    EXPECT_LT(std::filesystem::file_size(db) + 500000, size_before);           // and the file shrank
    EXPECT_EQ(run({baton_binary(), "runs", "show", "1", "--db", db}).exit_code, 1);
    // Every duration form the flags take.
    for (const char* age : {"90", "90s", "1m30s", "5min", "2h", "30d"})
        EXPECT_EQ(run({baton_binary(), "runs", "prune", "--older-than", age, "--db", db}).exit_code, 0) << age;
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
    EXPECT_NE(r.out.find("  cuda_oom [job]: new\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("duration"), std::string::npos) << r.out;
    auto missing = run({baton_binary(), "compare", "1", "7", "--db", db});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("no run 7"), std::string::npos) << missing.err;
    EXPECT_EQ(r.out.find("throughput"), std::string::npos) << r.out;  // no hook, no throughput row
    // With the hook's steps (as baton run stores them): throughput, step time and data wait compared.
    {
        auto h = baton::store::History::open(db);
        ASSERT_TRUE(h.ok());
        for (std::int64_t run_id : {1, 2}) {
            std::vector<baton::store::StepEvent> steps;
            for (int i = 0; i < 10; ++i) {
                baton::store::StepEvent e;
                e.t_ms = 1000 + i;
                e.step = i;
                e.step_ms = run_id == 1 ? 100 : 50;  // run 2 twice as fast
                e.wait_ms = run_id == 1 ? 40 : 5;
                e.samples = 32;
                steps.push_back(e);
            }
            ASSERT_TRUE(h->run_writes().add_steps(run_id, steps).ok());
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

// "Did it help?": the same problem in both runs is one line with its evidence moving, whatever
// the pids were; a GPU is matched by its UUID, not its index.
TEST(RunCommand, CompareMatchesFindingsAcrossRuns) {
    TempDir d;
    const std::string db = d.path() + "/baton.db";
    {
        auto h = baton::store::History::open(db);
        ASSERT_TRUE(h.ok());
        auto finding = [](const char* rule, const char* subject, double average) {
            baton::diagnose::Finding f;
            f.rule = rule;
            f.severity = baton::diagnose::Severity::warning;
            f.subject = subject;
            f.summary = "s";
            f.recommendation = "r";
            baton::diagnose::Evidence e;
            e.metric = "steps.data_wait_percent";
            e.average = average;
            e.threshold = "> 5";
            e.samples = 10;
            f.evidence.push_back(e);
            return f;
        };
        for (int run_id : {1, 2}) {
            auto id = h->run_writes().begin_run(run_id == 1 ? "before" : "after", "python train.py", "/", "host", 1000);
            ASSERT_TRUE(id.ok());
            // The same physical GPU, enumerated at index 0 in run 1 and index 1 in run 2.
            ASSERT_TRUE(h->run_writes()
                            .set_machine(*id, 2, 1 << 30,
                                         {{run_id == 1 ? 0u : 1u, "GPU-aaaa", "H200", 1u << 30},
                                          {run_id == 1 ? 1u : 0u, "GPU-bbbb", "H200", 1u << 30}})
                            .ok());
            ASSERT_TRUE(
                h->run_writes().add_finding(*id, 2000, finding("input_bound", "job", run_id == 1 ? 62 : 25)).ok());
            ASSERT_TRUE(h->run_writes()
                            .add_finding(*id, 2000, finding("gpu_underused", run_id == 1 ? "gpu:0" : "gpu:1", 40))
                            .ok());
            ASSERT_TRUE(h->run_writes()
                            .add_finding(*id, 2000, finding(run_id == 1 ? "swap_active" : "shm_low", "host", 3))
                            .ok());
            ASSERT_TRUE(h->run_writes().finish_run(*id, 5000, 0, "").ok());
        }
    }
    auto r = run({baton_binary(), "compare", "1", "2", "--db", db});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("  input_bound [job]: data wait 62 % -> 25 %, still present\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  gpu_underused [gpu:1]: data wait 40 % -> 40 %, still present\n"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("  shm_low [host]: new\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  swap_active [host]: gone\n"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("input_bound [job]: new"), std::string::npos) << r.out;
    auto j = run({baton_binary(), "compare", "1", "2", "--json", "--db", db});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    const auto doc = nlohmann::json::parse(j.out);
    EXPECT_EQ(doc["runs"][0]["name"], "before");
    EXPECT_EQ(doc["findings"][0]["rule"], "input_bound");
    EXPECT_EQ(doc["findings"][0]["status"], "both");
    EXPECT_EQ(doc["findings"][0]["evidence"][0]["a"], 62);
    EXPECT_EQ(doc["findings"][0]["evidence"][0]["b"], 25);
    EXPECT_TRUE(doc["figures"].is_array());
    EXPECT_EQ(run({baton_binary(), "compare", "1", "x", "--db", db}).err,
              "baton: no run 'x' (baton runs lists the runs)\n");
}

// A command that ends before the first sample says so instead of "memory peak 0 MiB of 0 MiB";
// --summary-json writes the summary as JSON.
TEST(RunCommand, FinishedBeforeTheFirstSampleAndSummaryJson) {
    TempDir d;
    const std::string json_path = d.path() + "/summary.json";
    auto r = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--interval", "10", "--no-db",
                  "--summary-json", json_path, "--", "true"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("(0 samples)"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("finished before the first sample: nothing was measured"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("0 MiB of 0 MiB"), std::string::npos) << r.err;
    const auto j = nlohmann::json::parse(read_text(json_path));
    EXPECT_EQ(j["exit_status"], 0);
    EXPECT_EQ(j["command"], nlohmann::json::array({"true"}));
    EXPECT_TRUE(j["findings"].is_array());
    EXPECT_TRUE(j["gpus"].empty());
    // A run with samples has the job's and the host's figures.
    auto longer = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--interval", "0.1", "--no-db",
                       "--summary-json", "-", "--", "sleep", "0.5"});
    ASSERT_EQ(longer.exit_code, 0) << longer.err;
    const auto k = nlohmann::json::parse(longer.out);
    EXPECT_GT(k["samples"].get<int>(), 1);
    EXPECT_GT(k["host"]["memory_total_bytes"].get<double>(), 0);
    EXPECT_GE(k["job"]["processes_peak"].get<int>(), 1);
    auto bad = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--no-db", "--summary-json",
                    "/nonexistent/dir/s.json", "--", "true"});
    EXPECT_EQ(bad.exit_code, 0);  // the command's status; the summary says the file was not written
    EXPECT_NE(bad.err.find("summary JSON: not written: cannot write /nonexistent/dir/s.json"), std::string::npos)
        << bad.err;
}

// --interval 0.1: every recorded sample is a full interval after the one before, the second too
// (it came 1-5 ms after the first, whose take includes the priming read: CPU peaks of 900 %).
TEST(RunCommand, EveryIntervalIsFullFromTheFirstSample) {
    TempDir d;
    const std::string db = d.path() + "/baton.db";
    for (int trial = 0; trial < 5; ++trial)
        ASSERT_EQ(run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--interval", "0.1", "--db", db,
                       "--", "sleep", "0.6"})
                      .exit_code,
                  0);
    for (int id = 1; id <= 5; ++id) {
        auto samples = run({baton_binary(), "runs", "export", std::to_string(id), "--db", db});
        std::vector<std::int64_t> t;
        std::istringstream lines(samples.out);
        for (std::string line; std::getline(lines, line);)
            t.push_back(baton::parse_rfc3339(nlohmann::json::parse(line)["time"].get<std::string>()).value_or(0));
        ASSERT_GE(t.size(), 3u) << samples.out;
        for (std::size_t i = 1; i < t.size(); ++i) EXPECT_GE(t[i] - t[i - 1], 80) << "run " << id << " sample " << i;
    }
}

// baton run judges the job's GPUs: those where its processes appear in NVML's list. On the fake
// eight-GPU box a job that uses none gets no GPU section and no GPU findings (it got eight
// gpu_underused before); a job on GPU3 gets GPU3 alone, and another job on GPU3 is contention.
TEST(RunCommand, JudgesTheJobsGpusNotTheBoxes) {
    TempDir d;
    const std::string db = d.path() + "/baton.db";
    auto env = fake_env("eight-busy");
    env["CUDA_VISIBLE_DEVICES"] = "3";
    auto cpu_only = run(
        {baton_binary(), "--config", "/dev/null", "run", "--interval", "0.2", "--db", db, "--", "sleep", "1.5"}, env);
    ASSERT_EQ(cpu_only.exit_code, 0) << cpu_only.err;
    EXPECT_NE(cpu_only.err.find("  GPU: the job used none of the machine's 8 (CUDA_VISIBLE_DEVICES=3)\n"),
              std::string::npos)
        << cpu_only.err;
    EXPECT_EQ(cpu_only.err.find("GPU0"), std::string::npos) << cpu_only.err;
    EXPECT_EQ(cpu_only.err.find("[gpu:"), std::string::npos) << cpu_only.err;
    auto shown = nlohmann::json::parse(run({baton_binary(), "runs", "show", "1", "--json", "--db", db}).out);
    EXPECT_TRUE(shown["gpus"].empty()) << shown;
    for (const auto& f : shown["finding_list"])
        EXPECT_EQ(f["subject"].get<std::string>().rfind("gpu:", 0), std::string::npos) << f;

    // The job on GPU3, beside another job's process there.
    const std::string procs = d.path() + "/gpu-processes";
    // Another job: a process whose parent is gone (reparented away from this test's tree).
    pid_t other = -1;
    {
        std::FILE* p = popen("sleep 30 >/dev/null 2>&1 & echo $!", "r");
        ASSERT_NE(p, nullptr);
        ASSERT_EQ(std::fscanf(p, "%d", &other), 1);
        pclose(p);
    }
    { std::ofstream(procs) << "3 " << other << " 1000000000\n"; }
    env["BATON_FAKE_NVML_PROCESSES"] = procs;
    auto on_gpu = run({baton_binary(), "--config", "/dev/null", "run", "--interval", "0.2", "--db", db, "--", "sh",
                       "-c", "echo \"3 $$ 40000000000\" >> " + procs + "; sleep 2"},
                      env);
    kill(other, SIGKILL);
    ASSERT_EQ(on_gpu.exit_code, 0) << on_gpu.err;
    EXPECT_NE(on_gpu.err.find("  GPU3 NVIDIA H200"), std::string::npos) << on_gpu.err;
    for (const char* g : {"GPU0", "GPU1", "GPU2", "GPU4", "GPU5", "GPU6", "GPU7", "the job used none"})
        EXPECT_EQ(on_gpu.err.find(g), std::string::npos) << g << " in " << on_gpu.err;
    EXPECT_NE(on_gpu.err.find("gpu_contention [gpu:3]"), std::string::npos) << on_gpu.err;
    for (const char* s : {"[gpu:0]", "[gpu:1]", "[gpu:2]", "[gpu:4]", "[gpu:5]", "[gpu:6]", "[gpu:7]"})
        EXPECT_EQ(on_gpu.err.find(s), std::string::npos) << s << " in " << on_gpu.err;
    shown = nlohmann::json::parse(run({baton_binary(), "runs", "show", "2", "--json", "--db", db}).out);
    ASSERT_EQ(shown["gpus"].size(), 1u) << shown;
    EXPECT_EQ(shown["gpus"][0]["index"], 3);
    auto samples = run({baton_binary(), "runs", "export", "2", "--db", db});
    std::size_t with_gpu = 0;
    for (std::size_t at = 0, nl; (nl = samples.out.find('\n', at)) != std::string::npos; at = nl + 1) {
        const auto s = nlohmann::json::parse(samples.out.substr(at, nl - at));
        for (const auto& g : s["gpus"]) {
            EXPECT_EQ(g["index"], 3) << s;
            // Stored per sample since version 3: power, temperature, SM clock, clock-event reasons.
            EXPECT_GT(g["power_watts"].get<double>(), 100) << s;
            EXPECT_GT(g["temperature_celsius"].get<double>(), 20) << s;
            EXPECT_GT(g["sm_clock_mhz"].get<double>(), 100) << s;
            EXPECT_TRUE(g["throttle_reasons"].is_array()) << s;
        }
        with_gpu += s["gpus"].empty() ? 0 : 1;
    }
    EXPECT_GT(with_gpu, 3u) << samples.out;
}

// Energy: the job's GPU's total-energy counter (the fake NVML's grows by its power each tick) and the
// CPU packages' RAPL counter (a fake sysfs tree) over the run, per step over the steps' span (the
// steps come with no code change), kept with the run and compared.
TEST(RunCommand, EnergyPerStepFromTheGpuCounterAndRapl) {
    TempDir d;
    const std::string db = d.path() + "/baton.db";
    const std::string procs = d.path() + "/gpu-processes";
    d.write("sys/class/powercap/intel-rapl:0/name", "package-0\n");
    d.write("sys/class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
    d.write("sys/class/powercap/intel-rapl:0/energy_uj", "1000000\n");
    d.write("baton.toml", "[sample]\nsys_root = \"" + d.path() + "/sys\"\n");
    auto env = fake_env("near-oom");
    env["BATON_FAKE_NVML_PROCESSES"] = procs;
    const std::string loops = source_dir() + "/tests/cli/auto_hook/loops.py";
    auto r = run({baton_binary(), "--config", d.path() + "/baton.toml", "run", "--interval", "0.2", "--db", db,
                  "--summary-json", d.path() + "/summary.json", "--", "sh", "-c",
                  "echo \"0 $$ 2000000000\" >> " + procs + "; exec /usr/bin/python3 " + loops + " plain 0 20"},
                 env, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The fake's counter grows by 612 J a tick (its 612 W as if a tick lasted 1 s).
    EXPECT_NE(r.err.find("  energy: GPUs "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(", CPU packages 0 J; "), std::string::npos) << r.err;  // the fake's counter stands still
    EXPECT_NE(r.err.find(" J per step, "), std::string::npos) << r.err;
    auto summary = nlohmann::json::parse(std::ifstream(d.path() + "/summary.json"));
    ASSERT_TRUE(summary.contains("energy")) << summary;
    const double gpu = summary["energy"]["gpu_joules"].get<double>();
    const double per_step = summary["energy"]["joules_per_step"].get<double>();
    EXPECT_GE(gpu, 612.0 * 3) << summary;  // at least a few ticks of it
    EXPECT_EQ(std::fmod(gpu, 612.0), 0.0) << summary;
    EXPECT_GT(per_step, 0);
    EXPECT_LT(per_step, gpu / 100);  // 320 steps shared the span's energy
    // Kept with the run: the report says it, and compare of two runs lines it up.
    auto md = run({baton_binary(), "report", "1", "--db", db, "--markdown"});
    EXPECT_NE(md.out.find("| energy | GPUs "), std::string::npos) << md.out;
    auto again =
        run({baton_binary(), "--config", d.path() + "/baton.toml", "run", "--interval", "0.2", "--db", db, "--", "sh",
             "-c", "echo \"0 $$ 2000000000\" >> " + procs + "; exec /usr/bin/python3 " + loops + " plain 0 10"},
            env, 120);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    auto cmp = run({baton_binary(), "compare", "1", "2", "--db", db});
    EXPECT_NE(cmp.out.find("energy per step"), std::string::npos) << cmp.out;
    // Without RAPL the summary says why the CPU packages are missing.
    auto plain = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--no-db", "--", "/usr/bin/python3",
                      loops, "plain", "0", "2"},
                     {}, 120);
    EXPECT_NE(plain.err.find("  energy: not measured (no GPU; CPU packages: no RAPL package domain under"),
              std::string::npos)
        << plain.err;
}
