// The real baton binary with its history under faults: a full disk mid-run (a small tmpfs), a
// database locked by another process while the command writes to stderr, ten runs starting on one
// new database, a damaged file read by every reading command, a history that is not ours or not
// writable, a reused pid, a planted link beside a report, and files left by a killed baton.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "store/history.hpp"
#include "store/history_runs.hpp"
#include "store/run_owner.hpp"
#include "test_support.hpp"

using namespace baton::test;

namespace {

std::vector<std::string> baton_run(const std::string& db, std::vector<std::string> command,
                                   std::vector<std::string> options = {}) {
    std::vector<std::string> argv{baton_binary(), "--config", "/dev/null", "run", "--no-gpus",
                                  "--interval",   "0.1",      "--db",      db};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
}

// A small tmpfs of its own, unmounted (and its directory removed) on destruction.
struct SmallFilesystem {
    std::string path;
    bool mounted = false;
    explicit SmallFilesystem(const TempDir& d) : path(d.path() + "/small") {
        std::filesystem::create_directory(path);
        mounted = geteuid() == 0 && mount("tmpfs", path.c_str(), "tmpfs", 0, "size=1m") == 0;
    }
    ~SmallFilesystem() {
        if (mounted) umount2(path.c_str(), MNT_DETACH);
    }
    // Writes until the filesystem is full.
    void fill() const {
        std::ofstream f(path + "/filler", std::ios::binary);
        const std::string block(4096, 'x');
        while (f.write(block.data(), block.size())) {
        }
    }
    void free_space() const { std::filesystem::remove(path + "/filler"); }
};

nlohmann::json runs_json(const std::string& db) {
    const CommandResult r = run({baton_binary(), "runs", "--db", db, "--json"});
    nlohmann::json all = nlohmann::json::array();
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) all.push_back(nlohmann::json::parse(line));
    return all;
}

std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

}  // namespace

TEST(HistoryFaultsCli, FullDiskMidRunIsSaidOnceAndTheRecordResumes) {
    TempDir d;
    SmallFilesystem fs(d);
    if (!fs.mounted) GTEST_SKIP() << "mounting a small tmpfs needs root";
    const std::string db = fs.path + "/baton.db";
    // Full from 1 s to 3 s and from 4 s to 6 s of a 7 s run: each outage is said once (not at every
    // try), the record resumes after each and ends complete.
    std::thread filler([&] {
        for (int outage = 0; outage < 2; ++outage) {
            std::this_thread::sleep_for(std::chrono::seconds(1));
            fs.fill();
            std::this_thread::sleep_for(std::chrono::seconds(2));
            fs.free_space();
        }
    });
    const CommandResult r = run(baton_run(db, {"sh", "-c", "sleep 7; exit 3"}));
    filler.join();
    EXPECT_EQ(r.exit_code, 3) << r.err;  // the command's, untouched
    EXPECT_EQ(count(r.err, "baton: cannot record this run in " + db + ": "), 2u) << r.err;
    EXPECT_NE(r.err.find("database or disk is full"), std::string::npos) << r.err;
    EXPECT_EQ(count(r.err, "baton: recording to " + db + " again"), 2u) << r.err;
    EXPECT_NE(r.err.find("  recorded as run 1 in " + db + "\n"), std::string::npos) << r.err;
    nlohmann::json runs = runs_json(db);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0]["state"], "finished");
    EXPECT_EQ(runs[0]["exit_status"], 3);
    const std::size_t at = r.err.find(" samples)");
    ASSERT_NE(at, std::string::npos);
    const std::string samples = r.err.substr(r.err.rfind('(', at) + 1, at - r.err.rfind('(', at) - 1);
    EXPECT_EQ(runs[0]["samples"], std::stoi(samples)) << r.err;  // every sample reached the database

    // Full from 1 s to the end: the summary says what is missing, and the run is interrupted.
    const std::string db2 = fs.path + "/second.db";
    std::thread filler2([&] {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        fs.fill();
    });
    const CommandResult r2 =
        run(baton_run(db2, {"sh", "-c", "sleep 3; exit 4"}, {"--summary-json", d.path() + "/s.json"}));
    filler2.join();
    EXPECT_EQ(r2.exit_code, 4) << r2.err;
    EXPECT_EQ(count(r2.err, "baton: cannot record this run in " + db2), 1u) << r2.err;
    EXPECT_NE(r2.err.find("  recorded as run 1 in " + db2 + ", incomplete: missing "), std::string::npos) << r2.err;
    // (what failed first may be a sample or a finding: a loaded machine has findings too)
    const std::size_t incomplete = r2.err.find(", incomplete: missing ");
    ASSERT_NE(incomplete, std::string::npos) << r2.err;
    const std::string line = r2.err.substr(incomplete, r2.err.find('\n', incomplete) - incomplete);
    EXPECT_NE(line.find(" samples"), std::string::npos) << line;
    EXPECT_NE(line.find("the end (exit status, summary) (cannot record a "), std::string::npos) << line;
    EXPECT_NE(line.find("database or disk is full)"), std::string::npos) << line;
    fs.free_space();
    const nlohmann::json summary = nlohmann::json::parse(read_text(d.path() + "/s.json"));
    EXPECT_EQ(summary["history"]["complete"], false);
    EXPECT_EQ(summary["history"]["end_recorded"], false);
    EXPECT_GT(summary["history"]["samples_lost"].get<int>(), 5);
    runs = runs_json(db2);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0]["state"], "interrupted");  // its baton is gone, its end never written
    EXPECT_EQ(runs[0]["samples"].get<int>() + summary["history"]["samples_lost"].get<int>(),
              summary["samples"].get<int>());
}

TEST(HistoryFaultsCli, ALockedHistoryNeverHoldsTheCommandsOutput) {
    TempDir d;
    const std::string db = d.path() + "/baton.db";
    ASSERT_EQ(run(baton_run(db, {"true"})).exit_code, 0);
    // Another process holds the write lock for 8 s while the command writes a line every 0.1 s.
    std::thread holder([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(800));
        sqlite3* other = nullptr;
        sqlite3_open(db.c_str(), &other);
        sqlite3_busy_timeout(other, 5000);
        sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
        std::this_thread::sleep_for(std::chrono::seconds(8));
        sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
        sqlite3_close(other);
    });
    const std::vector<std::string> argv =
        baton_run(db, {"sh", "-c", "i=0; while [ $i -lt 110 ]; do echo tick $i >&2; sleep 0.1; i=$((i+1)); done"});
    int err_pipe[2];
    ASSERT_EQ(pipe2(err_pipe, O_CLOEXEC), 0);
    const pid_t pid = fork();
    if (pid == 0) {
        const int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(err_pipe[1], 2);
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    close(err_pipe[1]);
    // When each tick line arrives.
    std::string err, pending;
    double longest_gap = 0;
    auto last = std::chrono::steady_clock::now();
    char buf[4096];
    for (ssize_t n; (n = read(err_pipe[0], buf, sizeof buf)) > 0;) {
        const auto now = std::chrono::steady_clock::now();
        err.append(buf, static_cast<std::size_t>(n));
        if (std::string(buf, static_cast<std::size_t>(n)).find("tick") != std::string::npos) {
            longest_gap = std::max(longest_gap, std::chrono::duration<double>(now - last).count());
            last = now;
        }
    }
    close(err_pipe[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    holder.join();
    EXPECT_EQ(count("\n" + err, "\ntick "), 110u) << err;
    EXPECT_LT(longest_gap, 1.0) << err;  // the lines kept flowing (8 s of lock)
    EXPECT_NE(err.find("  history writes waited up to "), std::string::npos) << err;  // the gap, reported
    EXPECT_NE(err.find("  recorded as run 2 in " + db + "\n"), std::string::npos) << err;
    EXPECT_EQ(runs_json(db)[1]["state"], "finished");
}

TEST(HistoryFaultsCli, TenRunsStartingOnANewDatabaseAreAllRecorded) {
    for (int trial = 0; trial < 3; ++trial) {
        TempDir d;
        const std::string db = d.path() + "/fresh/baton.db";
        std::vector<std::thread> runs;
        std::vector<CommandResult> results(10);
        for (int i = 0; i < 10; ++i) runs.emplace_back([&, i] { results[i] = run(baton_run(db, {"sleep", "0.3"})); });
        for (std::thread& t : runs) t.join();
        for (const CommandResult& r : results) {
            EXPECT_EQ(r.exit_code, 0) << r.err;
            EXPECT_NE(r.err.find("  recorded as run "), std::string::npos) << r.err;
        }
        EXPECT_EQ(runs_json(db).size(), 10u) << "trial " << trial;
    }
}

TEST(HistoryFaultsCli, EveryReaderFailsOnADamagedHistory) {
    TempDir d;
    const std::string db = d.path() + "/baton.db";
    {
        auto h = baton::store::History::open(db);
        for (int r = 0; r < 2; ++r) {
            auto id = h->run_writes().begin_run("run", "python train.py", "/", "box", 1000);
            baton::diagnose::Finding f;
            f.rule = "input_bound";
            f.severity = baton::diagnose::Severity::warning;
            f.subject = "job";
            f.summary = std::string(300, 's');
            f.recommendation = "more workers";
            std::vector<baton::store::StepEvent> steps(300);
            for (int i = 0; i < 300; ++i) {
                ASSERT_TRUE(h->run_writes().add_finding(*id, 1000 + i, f).ok());
                baton::store::RunSample s;
                s.t_ms = 1000 + i;
                s.gpus.resize(8);
                ASSERT_TRUE(h->run_writes().add_sample(*id, s).ok());
                steps[i].t_ms = 1000 + i;
                steps[i].data = std::string(100, 'd');
            }
            ASSERT_TRUE(h->run_writes().add_steps(*id, steps).ok());
            ASSERT_TRUE(h->run_writes().finish_run(*id, 9000, 0, "done").ok());
        }
    }
    const std::string intact = d.path() + "/intact.db";
    std::filesystem::copy_file(db, intact);
    struct Reader {
        std::vector<std::string> args;
        std::string table;
    };
    const std::vector<Reader> readers = {
        {{"runs", "show", "1"}, "findings"},
        {{"runs", "show", "1", "--json"}, "findings"},
        {{"runs", "export", "1"}, "samples"},
        {{"runs", "export", "1", "--steps"}, "steps"},
        {{"report", "1", "--markdown"}, "findings"},
        {{"report", "1", "--markdown"}, "samples"},
        {{"report", "1", "--html", d.path() + "/r.html"}, "steps"},
        {{"compare", "1", "2"}, "findings"},
        {{"compare", "1", "2"}, "samples"},
    };
    for (const Reader& reader : readers) {
        std::filesystem::copy_file(intact, db, std::filesystem::copy_options::overwrite_existing);
        std::vector<std::string> argv{baton_binary()};
        argv.insert(argv.end(), reader.args.begin(), reader.args.end());
        argv.insert(argv.end(), {"--db", db});
        const CommandResult whole = run(argv);
        EXPECT_EQ(whole.exit_code, 0) << reader.args[0] << " " << whole.err;
        ASSERT_TRUE(corrupt_table_root(db, reader.table));
        const CommandResult r = run(argv);
        SCOPED_TRACE(reader.args[0] + " " + reader.args[1] + " (" + reader.table + ")");
        EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
        EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;  // one line
        // (the list of runs counts each run's samples: a damaged samples table fails there first)
        EXPECT_TRUE(r.err.find(db + ": cannot read the " + reader.table + " of run 1") != std::string::npos ||
                    (reader.table == "samples" && r.err.find(db + ": cannot list runs") != std::string::npos))
            << r.err;
        EXPECT_NE(r.err.find("(the database file is damaged)"), std::string::npos) << r.err;
    }
}

TEST(HistoryFaultsCli, ReadersNeedNoWriteAccess) {
    TempDir d;
    const std::string dir = d.path() + "/theirs";
    const std::string db = dir + "/baton.db";
    ASSERT_EQ(run(baton_run(db, {"true"}, {"--name", "theirs"})).exit_code, 0);
    ASSERT_FALSE(std::filesystem::exists(db + "-wal"));  // the last writer's close checkpointed it
    // Someone else's history, readable, in a directory this user cannot write.
    chmod(db.c_str(), 0644);
    chmod(dir.c_str(), 0755);
    chmod(d.path().c_str(), 0755);
    std::vector<std::string> as_other;
    if (geteuid() == 0) {
        as_other = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
        if (access(as_other[0].c_str(), X_OK) != 0) GTEST_SKIP() << "setpriv (util-linux) is not installed";
    } else {
        chmod(dir.c_str(), 0555);
    }
    auto reader = [&](std::vector<std::string> args) {
        std::vector<std::string> argv = as_other;
        argv.push_back(baton_binary());
        argv.insert(argv.end(), args.begin(), args.end());
        argv.insert(argv.end(), {"--db", db});
        return run(argv, {{"HOME", "/nonexistent"}});
    };
    const CommandResult list = reader({"runs"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    EXPECT_NE(list.out.find("theirs"), std::string::npos) << list.out;
    EXPECT_EQ(reader({"runs", "show", "1"}).exit_code, 0);
    EXPECT_EQ(reader({"report", "1", "--markdown"}).exit_code, 0);
    EXPECT_EQ(reader({"compare", "1", "1"}).exit_code, 0);
    // Pruning writes: it fails, with a reason on one line.
    const CommandResult prune = reader({"runs", "prune", "--older-than", "0s"});
    EXPECT_EQ(prune.exit_code, 1) << prune.err;
    EXPECT_EQ(count(prune.err, "\n"), 1u) << prune.err;
    chmod(dir.c_str(), 0755);
    EXPECT_FALSE(std::filesystem::exists(db + "-shm"));  // nothing was created beside it
}

TEST(HistoryFaultsCli, FilesArePrivateAndLinksAreNeverFollowed) {
    TempDir d;
    const std::string db = d.path() + "/state/baton.db";
    const std::string report = d.path() + "/REPORT.html";
    // Another user plants links where a careless writer would write: the old fixed temporary
    // name, and the report's own name.
    d.write("victim", "precious\n");
    ASSERT_EQ(symlink((d.path() + "/victim").c_str(), (report + ".tmp").c_str()), 0);
    ASSERT_EQ(symlink((d.path() + "/victim").c_str(), (d.path() + "/summary.json").c_str()), 0);
    const CommandResult r =
        run(baton_run(db, {"sleep", "0.3"}, {"--report", report, "--summary-json", d.path() + "/summary.json"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_text(d.path() + "/victim"), "precious\n");
    struct stat st {};
    for (const std::string& file : {db, report, d.path() + "/summary.json"}) {
        ASSERT_EQ(lstat(file.c_str(), &st), 0) << file;
        EXPECT_TRUE(S_ISREG(st.st_mode)) << file;  // the link was replaced, not followed
        EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
    }
    ASSERT_EQ(stat((d.path() + "/state").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    const CommandResult again = run({baton_binary(), "report", "1", "--db", db, "--html", report});
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(read_text(d.path() + "/victim"), "precious\n");
    // No temporary file is left beside the report.
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(d.path())) files += e.path().filename().string()[0] == '.';
    EXPECT_EQ(files, 0u);
}

TEST(HistoryFaultsCli, AReusedPidDoesNotKeepAKilledRunRunning) {
    if (geteuid() != 0 || access("/proc/sys/kernel/ns_last_pid", W_OK) != 0)
        GTEST_SKIP() << "reusing a pid on purpose (ns_last_pid) needs root";
    TempDir d;
    const std::string db = d.path() + "/baton.db";
    // A baton run killed with -9: its pid is free again.
    const pid_t baton = fork();
    if (baton == 0) {
        const int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
        const std::vector<std::string> argv = baton_run(db, {"sleep", "30"});
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    for (int i = 0; i < 250 && runs_json(db).empty(); ++i) usleep(20000);
    ASSERT_EQ(runs_json(db).size(), 1u);
    kill(baton, SIGKILL);
    waitpid(baton, nullptr, 0);
    // Another process gets the same pid.
    pid_t reused = -1;
    for (int attempt = 0; attempt < 20 && reused != baton; ++attempt) {
        if (reused > 0) {
            kill(reused, SIGKILL);
            waitpid(reused, nullptr, 0);
        }
        std::ofstream(std::string("/proc/sys/kernel/ns_last_pid")) << baton - 1;
        reused = fork();
        if (reused == 0) {
            pause();
            _exit(0);
        }
    }
    ASSERT_EQ(reused, baton) << "could not get pid " << baton << " again";
    const nlohmann::json runs = runs_json(db);
    kill(reused, SIGKILL);
    waitpid(reused, nullptr, 0);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0]["state"], "interrupted");
}

TEST(HistoryFaultsCli, EventsDirectoriesOfKilledBatonsAreRemoved) {
    TempDir d;
    const std::string base = d.path() + "/runtime";
    std::filesystem::create_directory(base);
    // Left by a killed baton of this user (no such pid), by a living one (this test), and a
    // directory of another name: only the first goes.
    const std::string stale = base + "/baton-events-4194304-1-abcdef";
    const baton::store::RunOwner me = baton::store::current_owner();
    const std::string alive =
        base + "/baton-events-" + std::to_string(me.pid) + "-" + std::to_string(me.start_ticks.value_or(0)) + "-ghijkl";
    for (const std::string& dir : {stale, alive, base + "/other"}) {
        std::filesystem::create_directory(dir);
        std::ofstream(dir + "/events") << "";
    }
    const CommandResult r =
        run(baton_run(d.path() + "/baton.db", {"sh", "-c", "echo $BATON_EVENTS"}), {{"XDG_RUNTIME_DIR", base}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind(base + "/baton-events-", 0), 0u) << r.out;  // under $XDG_RUNTIME_DIR
    EXPECT_FALSE(std::filesystem::exists(stale));
    EXPECT_TRUE(std::filesystem::exists(alive));
    EXPECT_TRUE(std::filesystem::exists(base + "/other"));
    std::size_t left = 0;
    for (const auto& e : std::filesystem::directory_iterator(base)) left += !e.path().empty();
    EXPECT_EQ(left, 2u);  // baton's own directory went with it
}
