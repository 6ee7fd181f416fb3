// baton submit and the queue end to end: the real binary as the agent (`baton serve --no-http`) on
// the fake NVML with four idle GPUs, real clients, real jobs. GPUs are never shared by exclusive jobs
// (twenty submitted at once included), a GPU with a foreign process is skipped, --share packs what
// fits, cancel ends whole trees, an out-of-memory death is retried, another user can neither touch
// nor read a job and a job runs as its owner, and kill -9 of the agent loses and repeats nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <cstring>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)
#include <nlohmann/json.hpp>

#include "core/allowed_cpus.hpp"
#include "core/clock.hpp"
#include "test_support.hpp"

using namespace baton;
using nlohmann::json;

namespace {

using baton::test::GiB;

// Four idle 80 GiB GPUs (the first four of eight-busy, without their processes), written to `dir`.
std::string four_idle_gpus(const std::string& dir) {
    json s = json::parse(test::read_text(test::scenario_file("eight-busy")));
    s["devices"].erase(s["devices"].begin() + 4, s["devices"].end());
    for (json& d : s["devices"]) {
        d["values"]["processes"] = json::array();
        d["values"]["memory_total"] = 80 * GiB;
        for (json& t : d["ticks"]) {
            t["memory_used"] = 512ull << 20;
            t["utilization_gpu"] = 0;
        }
    }
    const std::string path = dir + "/four-idle.json";
    std::ofstream(path) << s.dump();
    return path;
}

// One agent started by the test (baton serve --no-http), on its own socket and database in a
// temporary directory; stopped by pid. restart() after kill() keeps the directory.
class Queue {
  public:
    // `history`: a database file to start from (copied to where the agent keeps its history).
    explicit Queue(const std::string& history = "") {
        if (!history.empty()) {
            std::filesystem::create_directories(dir_.path() + "/state/baton");
            std::filesystem::copy_file(history, dir_.path() + "/state/baton/baton.db");
        }
        ::chmod(dir_.path().c_str(), 0755);  // another user's client reaches the socket
        env_ = test::fake_env("eight-busy");
        env_["BATON_FAKE_NVML_SCENARIO"] = four_idle_gpus(dir_.path());
        env_["BATON_FAKE_NVML_PROCESSES"] = dir_.path() + "/gpu-processes";
        env_["BATON_SYSTEM_CONFIG"] = "/dev/null";
        env_["XDG_CONFIG_HOME"] = dir_.path();
        env_["XDG_STATE_HOME"] = dir_.path() + "/state";
        env_["BATON_SOCKET"] = dir_.path() + "/baton.sock";
        std::ofstream(dir_.path() + "/gpu-processes");
        start();
    }
    ~Queue() {
        kill(SIGKILL);
        // The jobs' supervisors outlive the agent by design: end the ones still running, and any
        // agent a submit started on this queue's socket while the test's own was down.
        test::run({"/usr/bin/pkill", "-KILL", "-f", "job-shim " + dir_.path()});
        test::run({"/usr/bin/pkill", "-KILL", "-f", "serve --no-http --socket " + dir_.path() + "/"});
    }
    void start() {
        pid_ = fork();
        if (pid_ == 0) {
            const int err = open((dir_.path() + "/agent.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
            dup2(err, 2);
            dup2(err, 1);
            if (!cgroup_.empty()) {  // the agent starts in the cgroup the test made for it
                const int procs = open((cgroup_ + "/cgroup.procs").c_str(), O_WRONLY);
                if (procs < 0 || write(procs, "0", 1) != 1) _exit(126);
                close(procs);
            }
            for (const auto& [k, v] : env_) setenv(k.c_str(), v.c_str(), 1);
            execl(test::baton_binary().c_str(), "baton", "serve", "--no-http", "--interval", "0.5", nullptr);
            _exit(127);
        }
        // Until it answers: a killed agent's socket file is still there, and a submit that found it
        // dead would start an agent of its own.
        const double until = monotonic_seconds() + 10;
        while (monotonic_seconds() < until && !answers()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    bool answers() const {
        const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::snprintf(a.sun_path, sizeof a.sun_path, "%s/baton.sock", dir_.path().c_str());
        const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        close(fd);
        return ok;
    }
    void kill(int sig) {
        if (pid_ <= 0) return;
        ::kill(pid_, sig);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    test::CommandResult baton(std::vector<std::string> args, double timeout = 60) const {
        args.insert(args.begin(), test::baton_binary());
        return test::run(args, env_, timeout);
    }
    // baton submit ARGS -- sh -c SCRIPT: the job id (0 when refused).
    std::int64_t submit(std::vector<std::string> args, const std::string& script) const {
        args.insert(args.begin(), "submit");
        for (const char* w : {"--", "sh", "-c"}) args.push_back(w);
        args.push_back(script);
        test::CommandResult r = baton(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return r.exit_code == 0 ? std::stoll(r.out) : 0;
    }
    json job(std::int64_t id) const {
        test::CommandResult r = baton({"show", std::to_string(id), "--json"});
        return json::parse(r.out, nullptr, false);
    }
    // Waits until every job given has ended; false after `seconds`.
    bool all_ended(const std::vector<std::int64_t>& ids, double seconds) const {
        const double until = monotonic_seconds() + seconds;
        while (monotonic_seconds() < until) {
            test::CommandResult r = baton({"queue", "--json"});
            json open = json::parse(r.out, nullptr, false);
            bool any = false;
            if (open.is_array())
                for (const json& j : open)
                    any = any || std::count(ids.begin(), ids.end(), j.value("id", std::int64_t{0})) > 0;
            if (r.exit_code == 0 && !any) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return false;
    }
    const std::string& dir() const { return dir_.path(); }
    pid_t pid() const { return pid_; }
    std::string log() const { return test::read_text(dir_.path() + "/agent.log"); }
    std::map<std::string, std::string>& env() { return env_; }
    void set_cgroup(const std::string& dir) { cgroup_ = dir; }

  private:
    test::TempDir dir_;
    std::map<std::string, std::string> env_;
    std::string cgroup_;
    pid_t pid_ = -1;
};

// A job's record line: "ID GPUS START_NS END_NS" appended to LOG when it ends.
std::string recorded(const std::string& log, double seconds) {
    return "s=$(date +%s%N); sleep " + std::to_string(seconds) +
           "; echo \"$BATON_JOB_ID ${CUDA_VISIBLE_DEVICES:--} $s $(date +%s%N)\" >> " + log;
}

struct Interval {
    std::int64_t job;
    std::vector<std::string> gpus;
    long double start, end;
};

std::vector<Interval> intervals(const std::string& log) {
    std::vector<Interval> out;
    std::istringstream in(test::read_text(log));
    std::string gpus;
    Interval i{};
    while (in >> i.job >> gpus >> i.start >> i.end) {
        i.gpus.clear();
        std::istringstream g(gpus);
        for (std::string x; std::getline(g, x, ',');)
            if (x != "-") i.gpus.push_back(x);
        out.push_back(i);
    }
    return out;
}

// No GPU served two of these jobs at overlapping times.
void expect_no_gpu_shared(const std::vector<Interval>& all) {
    for (std::size_t a = 0; a < all.size(); ++a)
        for (std::size_t b = a + 1; b < all.size(); ++b)
            for (const std::string& g : all[a].gpus)
                if (std::count(all[b].gpus.begin(), all[b].gpus.end(), g)) {
                    EXPECT_TRUE(all[a].end <= all[b].start || all[b].end <= all[a].start)
                        << "GPU" << g << " served jobs " << all[a].job << " and " << all[b].job << " at once";
                }
}

}  // namespace

TEST(Queue, JobsRunWithTheirEnvironmentLogsAndExitStatus) {
    Queue q;
    const std::int64_t id = q.submit({"--gpus", "2", "--name", "envdump"}, "env; echo to-stderr >&2; exit 3");
    ASSERT_GT(id, 0);
    test::CommandResult w = q.baton({"wait", std::to_string(id)});
    EXPECT_EQ(w.exit_code, 3) << w.err;
    const std::string out = q.baton({"logs", std::to_string(id)}).out;
    EXPECT_NE(out.find("CUDA_DEVICE_ORDER=PCI_BUS_ID\n"), std::string::npos) << out;
    EXPECT_NE(out.find("CUDA_VISIBLE_DEVICES=0,1\n"), std::string::npos) << out;
    EXPECT_NE(out.find("OMP_NUM_THREADS="), std::string::npos) << out;
    EXPECT_NE(out.find("BATON_JOB_ID=" + std::to_string(id) + "\n"), std::string::npos) << out;
    EXPECT_NE(out.find("BATON_EVENTS=/"), std::string::npos) << out;
    EXPECT_EQ(q.baton({"logs", std::to_string(id), "--stderr"}).out, "to-stderr\n");
    const json j = q.job(id);
    EXPECT_EQ(j.value("state", ""), "failed");
    EXPECT_EQ(j.value("exit_status", 0), 3);
    EXPECT_EQ(j.value("name", ""), "envdump");
    ASSERT_TRUE(j.contains("run_id")) << j.dump();
    // Its run, watched as baton run watches: in the history, with its end.
    test::CommandResult runs = q.baton({"runs", "--json"});
    EXPECT_NE(runs.out.find("envdump"), std::string::npos) << runs.out;
    EXPECT_EQ(q.baton({"wait", std::to_string(q.submit({}, "true"))}).exit_code, 0);
    const std::string table = q.baton({"queue", "--all"}).out;
    EXPECT_NE(table.find("ID  OWNER"), std::string::npos) << table;
    // What its jobs get (no delegated cgroup v2 subtree on this test's machine), said by the agent
    // when it starts and by baton doctor, which asks it.
    const std::string log = q.log();
    EXPECT_NE(log.find("baton: jobs get "), std::string::npos) << log;
    test::CommandResult doctor = q.baton({"doctor", "--no-torch", "--json"});
    const json checks = json::parse(doctor.out, nullptr, false);
    bool seen = false;
    for (const json& c : checks.value("checks", json::array()))
        if (c.value("id", "") == "job_cgroups") {
            seen = true;
            EXPECT_NE(c.value("detail", "").find("the agent on " + q.dir() + "/baton.sock gives "), std::string::npos)
                << c.dump();
            EXPECT_EQ(c.value("status", ""), log.find("a cgroup per job") != std::string::npos ? "pass" : "warn");
        }
    EXPECT_TRUE(seen) << doctor.out;
    EXPECT_NE(table.find("failed"), std::string::npos) << table;
    EXPECT_NE(table.find("done"), std::string::npos) << table;
}

TEST(Queue, SubmitStartsAnAgentWhenNoneAnswers) {
    test::TempDir dir;
    std::map<std::string, std::string> env = test::fake_env("eight-busy");
    env["BATON_SYSTEM_CONFIG"] = "/dev/null";
    env["XDG_CONFIG_HOME"] = dir.path();
    env["XDG_STATE_HOME"] = dir.path() + "/state";  // not there yet: the first use makes it
    env["BATON_SOCKET"] = dir.path() + "/baton.sock";
    test::CommandResult r = test::run({test::baton_binary(), "submit", "--", "sh", "-c", "echo hi"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    long long pid = 0;
    ASSERT_EQ(std::sscanf(r.err.c_str(), "baton: no agent was running: started one for you (pid %lld", &pid), 1)
        << r.err;
    test::CommandResult w = test::run({test::baton_binary(), "wait", r.out.substr(0, r.out.size() - 1)}, env);
    EXPECT_EQ(w.exit_code, 0) << w.err;
    EXPECT_EQ(test::run({test::baton_binary(), "logs", "1"}, env).out, "hi\n");
    // The next submit finds it.
    test::CommandResult again = test::run({test::baton_binary(), "submit", "--", "true"}, env);
    EXPECT_EQ(again.err, "");
    EXPECT_EQ(again.out, "2\n");
    ASSERT_GT(pid, 1);
    kill(static_cast<pid_t>(pid), SIGTERM);
    for (int i = 0; i < 100 && kill(static_cast<pid_t>(pid), 0) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

TEST(Queue, BadInputIsRefusedWithTheReasonAndTheAgentGoesOn) {
    Queue q;
    struct Case {
        std::vector<std::string> args;
        const char* says;
    };
    for (const Case& c : std::vector<Case>{
             {{"submit", "--gpus", "99", "--", "true"}, "asks for 99 GPU(s), this machine has 4"},
             {{"submit", "--gpu", "7", "--", "true"}, "7"},
             {{"submit", "--after", "999", "--", "true"}, "no job 999"},
             {{"submit", "--after", "x", "--", "true"}, "--after x"},
             {{"submit", "--gpu-mem", "lots", "--gpus", "1", "--", "true"}, "--gpu-mem lots"},
             {{"submit", "--share", "--gpus", "1", "--", "true"}, "--share needs"},
             {{"submit", "--bogus", "--", "true"}, "--bogus"},
             {{"submit"}, "no command given"},
             {{"show", "999"}, "no job 999"},
             {{"show", "abc"}, "not a job id"},
             {{"cancel", "0"}, "not a job id"},
             {{"release", "999"}, "no job 999"},
             {{"submit", "--dry-run", "--", "true"}, "--dry-run goes with --slurm"},
             {{"submit", "--nodes", "2", "--", "true"}, "--nodes goes with --slurm"},
             {{"submit", "--slurm", "--gpu", "0", "--", "true"}, "--slurm with --gpu"},
             {{"submit", "--slurm", "--gpu-mem", "2G", "--", "true"}, "--slurm with --gpu-mem"},
             {{"submit", "--slurm", "--priority", "3", "--", "true"}, "--slurm with --priority"},
             {{"submit", "--slurm", "--on-oom", "retry", "--", "true"}, "--slurm with --on-oom retry"},
             {{"show", "slurm:x"}, "not a job id"},
         }) {
        test::CommandResult r = q.baton(c.args);
        std::string words;
        for (const std::string& w : c.args) words += w + " ";
        EXPECT_NE(r.exit_code, 0) << words;
        EXPECT_NE(r.err.find(c.says), std::string::npos) << words << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
    // A malformed and an oversized request straight on the socket: an error line each.
    for (const std::string& line : {std::string("{\"op\": 12}\n"), std::string(5u << 20, 'x')}) {
        const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const std::string path = q.dir() + "/baton.sock";
        std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
        ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
        // (the agent stops reading past its limit: the rest of an oversized line may not go out)
        for (std::size_t at = 0; at < line.size();) {
            const ssize_t n = send(fd, line.data() + at, line.size() - at, MSG_NOSIGNAL);
            if (n <= 0) break;
            at += static_cast<std::size_t>(n);
        }
        std::string answer;
        char c;
        while (read(fd, &c, 1) == 1 && c != '\n') answer += c;
        close(fd);
        EXPECT_NE(answer.find("\"ok\":false"), std::string::npos) << answer;
    }
    EXPECT_EQ(q.baton({"wait", std::to_string(q.submit({}, "true"))}).exit_code, 0);  // still serving
}

// What this machine can give is taken (every CPU the agent may use: the client does not judge CPUs
// it cannot see), what it can never give is refused at once (one CPU more; GPUs where there is no
// NVIDIA driver), and a queue with only ended jobs says how to list them.
TEST(Queue, WhatTheMachineCanGiveIsTakenAndWhatItNeverCanIsRefused) {
    Queue q;
    EXPECT_EQ(q.baton({"queue"}).out, "no job: the queue is empty (baton submit -- CMD queues one)\n");
    const std::size_t cpus = allowed_cpus().size();
    const std::int64_t all = q.submit({"--cpus", std::to_string(cpus)}, "true");
    ASSERT_GT(all, 0) << "every CPU of the machine";
    EXPECT_EQ(q.baton({"wait", std::to_string(all)}).exit_code, 0);
    test::CommandResult more = q.baton({"submit", "--cpus", std::to_string(cpus + 1), "--", "true"});
    EXPECT_NE(more.exit_code, 0);
    EXPECT_NE(more.err.find(fmt::format("asks for {} CPUs, this queue has {}", cpus + 1, cpus)), std::string::npos)
        << more.err;
    EXPECT_EQ(q.baton({"queue"}).out, "no job queued or running; 1 ended (baton queue --all lists them)\n");

    // The same agent on a machine without an NVIDIA driver: a job asking for a GPU would wait for ever.
    q.kill(SIGTERM);
    q.env()["BATON_NVML_LIBRARY"] = q.dir() + "/no/libnvidia-ml.so.1";
    q.start();
    ASSERT_TRUE(q.answers());
    test::CommandResult gpu = q.baton({"submit", "--gpus", "1", "--", "true"});
    EXPECT_NE(gpu.exit_code, 0) << gpu.out;
    EXPECT_NE(gpu.err.find("asks for 1 GPU(s), this machine has none the queue can use (no NVIDIA driver"),
              std::string::npos)
        << gpu.err;
    EXPECT_EQ(q.submit({"--cpus", "1"}, "true") > 0, true) << "a CPU job still runs there";
}

// One exit status table for every command that asks the agent (docs/queue.md, "Exit status"): 0
// done, 1 the agent refused, 2 the command line is wrong, 3 no agent answers. Command by command.
TEST(Queue, ExitStatusIsOneTableForEveryCommand) {
    Queue q;
    using Args = std::vector<std::string>;
    const std::vector<Args> about_a_job = {
        {"show", "999"},  {"logs", "999"},  {"cancel", "999"}, {"hold", "999"},    {"release", "999"},
        {"retry", "999"}, {"pause", "999"}, {"resume", "999"}, {"restart", "999"}, {"edit", "999", "--priority", "1"},
        {"wait", "999"}};
    for (const Args& c : about_a_job) {
        test::CommandResult r = q.baton(c);
        EXPECT_EQ(r.exit_code, 1) << c[0] << " of no job: the agent refuses\n" << r.err;
        EXPECT_NE(r.err.find("999"), std::string::npos) << c[0] << ": " << r.err;
    }
    for (const Args& c : std::vector<Args>{{"submit", "--gpus", "99", "--", "true"},
                                           {"submit", "--group", "nosuch", "--", "true"},
                                           {"group", "remove", "nosuch"}})
        EXPECT_EQ(q.baton(c).exit_code, 1) << c[0] << " " << c[1];
    for (const Args& c : std::vector<Args>{{"show", "abc"},
                                           {"logs", "x"},
                                           {"cancel", "0"},
                                           {"hold", "-1"},
                                           {"edit", "1", "--priority", "many"},
                                           {"submit", "--bogus", "--", "true"},
                                           {"group", "add", "bad/name"},
                                           {"queue", "--watch", "--json"}}) {
        test::CommandResult r = q.baton(c);
        EXPECT_EQ(r.exit_code, 2) << c[0] << " " << c[1] << ": a wrong command line\n" << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
    // group add without --parallel keeps an existing group's limit; --json answers in JSON.
    test::CommandResult r = q.baton({"group", "add", "pair", "--parallel", "2", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out, nullptr, false), json({{"name", "pair"}, {"parallel", 2}, {"changed", true}}));
    r = q.baton({"group", "add", "pair"});
    EXPECT_EQ(r.out, "group pair: 2 at once (unchanged: --parallel N changes it)\n");
    EXPECT_EQ(json::parse(q.baton({"group", "--json"}).out, nullptr, false)[0].value("parallel", 0), 2);
    r = q.baton({"group", "remove", "pair", "--json"});
    EXPECT_EQ(json::parse(r.out, nullptr, false), json({{"name", "pair"}, {"removed", true}})) << r.out << r.err;

    // No agent answers: 3, whichever command asked.
    q.kill(SIGTERM);
    for (Args c : about_a_job) {
        c[1] = "1";
        test::CommandResult none = q.baton(c);
        EXPECT_EQ(none.exit_code, 3) << c[0] << " without an agent\n" << none.err;
        EXPECT_NE(none.err.find("no baton agent answers"), std::string::npos) << c[0] << ": " << none.err;
    }
    for (const Args& c : std::vector<Args>{
             {"queue"}, {"group"}, {"group", "add", "g"}, {"group", "remove", "g"}, {"queue", "--gpus"}, {"usage"}})
        EXPECT_EQ(q.baton(c).exit_code, 3) << c[0];
}

TEST(Queue, FortyJobsNeverShareAGpuAndSkipTheForeignOne) {
    Queue q;
    // A process the queue did not start holds GPU2.
    pid_t foreign = fork();
    if (foreign == 0) {
        execlp("sleep", "sleep", "300", nullptr);
        _exit(127);
    }
    std::ofstream(q.dir() + "/gpu-processes") << "2 " << foreign << " " << (4 * GiB) << "\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // the agent sees it
    const std::string log = q.dir() + "/jobs.log";
    std::mt19937 rng(7);
    std::vector<std::int64_t> ids;
    std::int64_t first = 0, dependent = 0;
    for (int i = 0; i < 40; ++i) {
        std::vector<std::string> args{"--gpus",     std::to_string(1 + rng() % 2), "--cpus", "0",
                                      "--priority", std::to_string(rng() % 3)};
        if (i == 10) args = {"--gpus", "0"};  // a CPU job runs beside them
        if (i == 20) args.insert(args.end(), {"--after", std::to_string(first) + ":ok"});
        ids.push_back(q.submit(args, recorded(log, 0.05 + 0.1 * (rng() % 4))));
        if (i == 0) first = ids.back();
        if (i == 20) dependent = ids.back();
    }
    ASSERT_TRUE(q.all_ended(ids, 90)) << q.log();
    kill(foreign, SIGKILL);
    waitpid(foreign, nullptr, 0);
    const std::vector<Interval> all = intervals(log);
    EXPECT_EQ(all.size(), 40u);
    expect_no_gpu_shared(all);
    for (const Interval& i : all) {
        EXPECT_EQ(std::count(i.gpus.begin(), i.gpus.end(), "2"), 0) << "job " << i.job << " got the foreign GPU";
    }
    // --after ...:ok started after its dependency ended.
    auto of = [&](std::int64_t id) {
        return *std::find_if(all.begin(), all.end(), [&](const Interval& i) { return i.job == id; });
    };
    EXPECT_GE(of(dependent).start, of(first).end);
}

TEST(Queue, TwentyAtOnceOnFourFreeGpusStartExactlyFour) {
    Queue q;
    const std::string log = q.dir() + "/jobs.log";
    std::vector<std::future<std::int64_t>> submits;
    for (int i = 0; i < 20; ++i)
        submits.push_back(std::async(std::launch::async, [&] {
            return q.submit({"--gpus", "1", "--cpus", "0"}, recorded(log, 0.6));
        }));
    std::vector<std::int64_t> ids;
    for (auto& f : submits) ids.push_back(f.get());
    json open;
    auto running = [&] {
        open = json::parse(q.baton({"queue", "--json"}).out, nullptr, false);
        int n = 0;
        if (open.is_array())
            for (const json& j : open) n += j.value("state", "") == "running";
        return n;
    };
    EXPECT_TRUE(test::eventually([&] { return running() == 4; }, 10, 0.1)) << open.dump();
    ASSERT_TRUE(q.all_ended(ids, 60));
    const std::vector<Interval> all = intervals(log);
    EXPECT_EQ(all.size(), 20u);
    expect_no_gpu_shared(all);
}

TEST(Queue, ShareFitsTwoSmallJobsOnOneGpuAndRefusesAThird) {
    Queue q;
    const std::string log = q.dir() + "/jobs.log";
    // On GPU0 (80 GiB, 10 % kept free): 30 + 30 fit, a third 30 does not. 3 s jobs: three submits
    // under ASan on a loaded machine took over a second, and 1 s jobs had ended before the look.
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 3; ++i)
        ids.push_back(q.submit({"--gpu", "0", "--cpus", "0", "--share", "--gpu-mem", "30G"}, recorded(log, 3.0)));
    EXPECT_TRUE(test::eventually(
        [&] { return q.job(ids[0]).value("state", "") == "running" && q.job(ids[1]).value("state", "") == "running"; },
        10, 0.1));
    const json third = q.job(ids[2]);
    EXPECT_EQ(third.value("state", ""), "queued") << third.dump();
    EXPECT_NE(third.value("waiting", "").find("GPU0"), std::string::npos) << third.dump();
    ASSERT_TRUE(q.all_ended(ids, 30));
    const std::vector<Interval> all = intervals(log);
    ASSERT_EQ(all.size(), 3u);
    auto of = [&](std::int64_t id) {
        return *std::find_if(all.begin(), all.end(), [&](const Interval& i) { return i.job == id; });
    };
    EXPECT_LT(of(ids[1]).start, of(ids[0]).end);  // the two shared it
    EXPECT_GE(of(ids[2]).start, std::min(of(ids[0]).end, of(ids[1]).end));
}

TEST(Queue, GpuMemAutoIsThePeakOfEarlierRunsOfTheSameName) {
    Queue q;
    // The job shows up on its GPU the way a CUDA context does in NVML.
    const std::int64_t first =
        q.submit({"--gpus", "1", "--cpus", "0", "--name", "probe"},
                 "echo \"$CUDA_VISIBLE_DEVICES $$ 1073741824\" >> " + q.dir() + "/gpu-processes; sleep 2");
    ASSERT_EQ(q.baton({"wait", std::to_string(first)}).exit_code, 0);
    const std::int64_t again =
        q.submit({"--gpus", "1", "--cpus", "0", "--name", "probe", "--gpu-mem", "auto", "--hold"}, "true");
    const json j = q.job(again);
    // The four idle GPUs use 512 MiB each: + 10 %, rounded up to 256 MiB.
    EXPECT_EQ(j["want"].value("gpu_memory_bytes", std::uint64_t{0}), 768ull << 20) << j.dump();
    test::CommandResult none =
        q.baton({"submit", "--gpus", "1", "--name", "never-ran", "--gpu-mem", "auto", "--", "true"});
    EXPECT_EQ(none.exit_code, 1);
    EXPECT_NE(none.err.find("no successful run named 'never-ran'"), std::string::npos) << none.err;
    test::CommandResult nameless = q.baton({"submit", "--gpus", "1", "--gpu-mem", "auto", "--", "true"});
    EXPECT_EQ(nameless.exit_code, 2);
    EXPECT_NE(nameless.err.find("give --name"), std::string::npos) << nameless.err;
}

TEST(Queue, HoldReleaseCancelAndTheWholeTree) {
    Queue q;
    const std::int64_t held = q.submit({"--hold"}, "true");
    EXPECT_EQ(q.job(held).value("state", ""), "held");
    EXPECT_EQ(q.baton({"release", std::to_string(held)}).exit_code, 0);
    EXPECT_EQ(q.baton({"wait", std::to_string(held)}).exit_code, 0);
    const std::string pids = q.dir() + "/pids";
    const std::int64_t id =
        q.submit({}, "setsid sh -c 'echo $$ >> " + pids + "; exec sleep 300' & echo $$ >> " + pids + "; sleep 300");
    std::vector<pid_t> tree;
    test::eventually(
        [&] {
            tree.clear();
            std::ifstream in(pids);
            for (pid_t p; in >> p;) tree.push_back(p);
            return tree.size() >= 2;
        },
        10);
    ASSERT_EQ(tree.size(), 2u);
    test::CommandResult c = q.baton({"cancel", std::to_string(id), "--grace", "1"});
    EXPECT_EQ(c.exit_code, 0) << c.err;
    EXPECT_EQ(q.baton({"wait", std::to_string(id)}).exit_code, 143);
    EXPECT_EQ(q.job(id).value("state", ""), "cancelled");
    for (pid_t p : tree) EXPECT_NE(kill(p, 0), 0) << "pid " << p << " outlived the cancel";
    // A queued job leaves the queue at once.
    const std::int64_t later = q.submit({"--hold"}, "true");
    EXPECT_EQ(q.baton({"cancel", std::to_string(later)}).exit_code, 0);
    EXPECT_EQ(q.job(later).value("state", ""), "cancelled");
    EXPECT_NE(q.baton({"hold", std::to_string(later)}).exit_code, 0);
    EXPECT_EQ(q.baton({"retry", std::to_string(later)}).exit_code, 0);
    EXPECT_EQ(q.baton({"wait", std::to_string(later)}).exit_code, 0);
    EXPECT_EQ(q.job(later).value("attempt", 0), 1);
}

// /proc/PID/stat: the state letter and utime + stime (clock ticks); '?' when it is gone.
std::pair<char, long> state_and_cpu(pid_t pid) {
    const std::string stat = test::read_text("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) return {'?', 0};
    std::istringstream in(stat.substr(close + 2));
    std::vector<std::string> f;
    for (std::string w; in >> w;) f.push_back(w);
    if (f.size() < 13) return {'?', 0};
    return {f[0][0], std::stol(f[11]) + std::stol(f[12])};
}

// pueue's pause: the whole tree stops, even a process that left the job's session, and its CPU time
// stays flat; the job keeps its place (running, its CPUs) and says it is paused; resume continues it;
// a cancel of a paused job ends it.
TEST(Queue, PauseStopsTheWholeTreeAndResumeContinuesIt) {
    Queue q;
    const std::string pids = q.dir() + "/pids";
    const std::int64_t id = q.submit({}, "setsid sh -c 'echo $$ >> " + pids + "; while :; do :; done' & echo $$ >> " +
                                             pids + "; while :; do :; done");
    std::vector<pid_t> tree;
    for (int i = 0; i < 100 && tree.size() < 2; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        tree.clear();
        std::istringstream in(test::read_text(pids));
        for (pid_t p; in >> p;) tree.push_back(p);
    }
    ASSERT_EQ(tree.size(), 2u);
    const std::string job = std::to_string(id);
    EXPECT_NE(q.baton({"resume", job}).out.find("not paused"), std::string::npos);
    test::CommandResult p = q.baton({"pause", job});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, "job " + job + ": paused\n");
    test::eventually([&] { return std::ranges::all_of(tree, [](pid_t t) { return state_and_cpu(t).first == 'T'; }); },
                     5);
    std::vector<long> before;
    for (pid_t t : tree) {
        const auto [state, cpu] = state_and_cpu(t);
        EXPECT_EQ(state, 'T') << "pid " << t << " still runs";
        before.push_back(cpu);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // an interval: a paused tree uses no CPU in it
    for (std::size_t i = 0; i < tree.size(); ++i)
        EXPECT_EQ(state_and_cpu(tree[i]).second, before[i]) << "pid " << tree[i] << " used CPU while paused";
    json j = q.job(id);
    EXPECT_EQ(j.value("state", ""), "running") << j.dump();
    EXPECT_TRUE(j.contains("paused_ms")) << j.dump();
    EXPECT_EQ(j["cpus"].size(), 1u) << "its CPU stays its own";
    EXPECT_NE(q.baton({"queue"}).out.find("paused"), std::string::npos);
    EXPECT_NE(q.baton({"show", job}).out.find("paused for"), std::string::npos);
    EXPECT_NE(q.baton({"pause", job}).out.find("already paused"), std::string::npos);

    // Resumed: the tree runs again.
    p = q.baton({"resume", job});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, "job " + job + ": running\n");
    test::eventually(
        [&] {
            for (std::size_t i = 0; i < tree.size(); ++i) {
                const auto [state, cpu] = state_and_cpu(tree[i]);
                if (state == 'T' || cpu <= before[i]) return false;
            }
            return true;
        },
        10);
    for (std::size_t i = 0; i < tree.size(); ++i) {
        const auto [state, cpu] = state_and_cpu(tree[i]);
        EXPECT_NE(state, 'T');
        EXPECT_GT(cpu, before[i]) << "pid " << tree[i] << " did not run again";
    }
    EXPECT_FALSE(q.job(id).contains("paused_ms"));

    // Paused again, then cancelled: SIGTERM reaches the stopped tree.
    EXPECT_EQ(q.baton({"pause", job}).exit_code, 0);
    test::CommandResult c = q.baton({"cancel", job, "--grace", "5"});
    EXPECT_EQ(c.exit_code, 0) << c.err;
    EXPECT_EQ(q.baton({"wait", job}, 20).exit_code, 143);
    j = q.job(id);
    EXPECT_EQ(j.value("state", ""), "cancelled") << j.dump();
    EXPECT_FALSE(j.contains("paused_ms")) << j.dump();
    for (pid_t t : tree) EXPECT_NE(kill(t, 0), 0) << "pid " << t << " outlived the cancel";

    // Only a running job is paused; a Slurm job is Slurm's.
    const std::int64_t held = q.submit({"--hold"}, "true");
    test::CommandResult refused = q.baton({"pause", std::to_string(held)});
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_NE(refused.err.find("job " + std::to_string(held) + " is held: only a running job can be paused"),
              std::string::npos)
        << refused.err;
    refused = q.baton({"resume", "slurm:12"});
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find("scontrol suspend"), std::string::npos) << refused.err;
}

// pueue's restart and clean: a new job from an ended one's spec; the ended jobs forgotten with their
// logs, but a job an open job waits for, the newest job (its id is never given again) and other users'.
TEST(Queue, RestartMakesANewJobAndCleanForgetsTheEndedOnes) {
    Queue q;
    const std::int64_t first = q.submit({"--name", "again"}, "echo ran in $PWD with $BATON_TEST_WORD");
    EXPECT_EQ(q.baton({"wait", std::to_string(first)}).exit_code, 0);
    test::CommandResult r = q.baton({"restart", std::to_string(first)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::int64_t second = std::stoll(r.out);
    EXPECT_GT(second, first);
    EXPECT_EQ(q.baton({"wait", std::to_string(second)}).exit_code, 0);
    EXPECT_EQ(q.baton({"logs", std::to_string(second)}).out, q.baton({"logs", std::to_string(first)}).out);
    const json a = q.job(first), b = q.job(second);
    for (const char* key : {"name", "argv", "cwd", "want", "priority"}) EXPECT_EQ(a[key], b[key]) << key;
    EXPECT_EQ(b.value("attempt", -1), 0);
    // Only an ended job is restarted.
    const std::int64_t held = q.submit({"--hold"}, "true");
    r = q.baton({"restart", std::to_string(held)});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("is held: only an ended job is restarted"), std::string::npos) << r.err;

    // A failed job an open job waits for stays (--after FAILED:ok: it waits for ever); the others ended
    // go, with their directories.
    const std::int64_t failed = q.submit({}, "exit 3");
    EXPECT_EQ(q.baton({"wait", std::to_string(failed)}).exit_code, 3);
    const std::int64_t waiter = q.submit({"--after", std::to_string(failed) + ":ok"}, "true");
    EXPECT_EQ(q.baton({"cancel", std::to_string(held)}).exit_code, 0);
    const std::int64_t newest = q.submit({}, "true");
    EXPECT_EQ(q.baton({"wait", std::to_string(newest)}).exit_code, 0);
    const std::string jobs = q.dir() + "/state/baton/jobs/";
    ASSERT_EQ(access((jobs + std::to_string(first)).c_str(), F_OK), 0);
    r = q.baton({"queue", "clean", "--successful-only", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out, nullptr, false)["removed"], json({first, second})) << r.out << " (the newest stays)";
    EXPECT_NE(access((jobs + std::to_string(first)).c_str(), F_OK), 0) << "its directory went with it";
    EXPECT_NE(q.baton({"show", std::to_string(first)}).exit_code, 0);
    r = q.baton({"queue", "clean", "--json"});
    EXPECT_EQ(json::parse(r.out, nullptr, false)["removed"], json({held}))
        << r.out << " (" << waiter << " waits for " << failed << ")";
    EXPECT_EQ(q.job(failed).value("state", ""), "failed");
    EXPECT_EQ(q.baton({"cancel", std::to_string(waiter)}).exit_code, 0);
    r = q.baton({"queue", "clean"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "forgot 2 ended job(s)\n");  // the failed one and the waiter, cancelled
    EXPECT_EQ(q.job(newest).value("state", ""), "done");
    EXPECT_GT(q.submit({}, "true"), newest) << "no id is given twice";
}

// An array: each element a job of its own with its index in BATON_ARRAY_INDEX and in place of {},
// at most --max-parallel of them at once (each asks no CPU: only the limit holds them back); and
// --array-file, one job per line.
TEST(Queue, AnArrayRunsEachElementWithItsIndexAndAtMostMaxParallelAtOnce) {
    Queue q;
    const std::string log = q.dir() + "/array.log";
    test::CommandResult r = q.baton(
        {"submit", "--array", "3-13:2", "--max-parallel", "2", "--cpus", "0", "--name", "sweep", "--", "sh", "-c",
         "s=$(date +%s%N); sleep 0.4; echo \"$BATON_ARRAY_ID $BATON_ARRAY_INDEX {} $BATON_JOB_ID $s "
         "$(date +%s%N)\" >> " +
             log});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::int64_t> ids;
    std::istringstream printed(r.out);
    for (std::int64_t id; printed >> id;) ids.push_back(id);
    ASSERT_EQ(ids.size(), 6u) << r.out;
    for (std::size_t k = 1; k < ids.size(); ++k) EXPECT_EQ(ids[k], ids[0] + static_cast<std::int64_t>(k));
    const json third = q.job(ids[2]);
    EXPECT_EQ(third.value("array_id", 0), ids[0]);
    EXPECT_EQ(third.value("array_index", 0), 7);
    EXPECT_EQ(third.value("max_parallel", 0), 2);
    EXPECT_EQ(third.value("name", ""), "sweep");
    ASSERT_TRUE(q.all_ended(ids, 60));
    std::istringstream in(test::read_text(log));
    struct Ran {
        std::int64_t array, index, placeholder, job;
        long double start, end;
    };
    std::vector<Ran> ran;
    for (Ran x{}; in >> x.array >> x.index >> x.placeholder >> x.job >> x.start >> x.end;) ran.push_back(x);
    ASSERT_EQ(ran.size(), 6u) << test::read_text(log);
    std::set<std::int64_t> indices;
    for (const Ran& x : ran) {
        EXPECT_EQ(x.array, ids[0]);
        EXPECT_EQ(x.placeholder, x.index);
        EXPECT_EQ(x.job, ids[static_cast<std::size_t>((x.index - 3) / 2)]) << "element " << x.index;
        indices.insert(x.index);
        // At any element's start, at most one other was running.
        int others = 0;
        for (const Ran& y : ran) others += &y != &x && y.start <= x.start && x.start < y.end ? 1 : 0;
        EXPECT_LE(others, 1) << "element " << x.index << " started beside " << others << " others";
    }
    EXPECT_EQ(indices, (std::set<std::int64_t>{3, 5, 7, 9, 11, 13}));
    const std::string table = q.baton({"queue", "--all"}).out;
    EXPECT_NE(table.find("[13] sweep"), std::string::npos) << table;

    // --array-file: {} is the line; without {}, the line is the last argument.
    std::ofstream(q.dir() + "/lines") << "first line\n\nsecond 'quoted' line\r\n";
    r = q.baton({"submit", "--array-file", q.dir() + "/lines", "--", "printf", "[%s]", "{}"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream two(r.out);
    std::int64_t a = 0, b = 0;
    two >> a >> b;
    EXPECT_EQ(q.baton({"wait", std::to_string(b)}).exit_code, 0);
    EXPECT_EQ(q.baton({"wait", std::to_string(a)}).exit_code, 0);
    EXPECT_EQ(q.baton({"logs", std::to_string(a)}).out, "[first line]");
    EXPECT_EQ(q.baton({"logs", std::to_string(b)}).out, "[second 'quoted' line]");
    EXPECT_EQ(q.job(b).value("array_index", 0), 3);  // its line's number
    r = q.baton({"submit", "--array-file", q.dir() + "/lines", "--json", "--", "echo"});
    const json answer = json::parse(r.out, nullptr, false);
    ASSERT_EQ(answer.value("ids", json::array()).size(), 2u) << r.out;
    EXPECT_EQ(q.baton({"wait", std::to_string(answer["ids"][1].get<std::int64_t>())}).exit_code, 0);
    EXPECT_EQ(q.baton({"logs", std::to_string(answer["ids"][1].get<std::int64_t>())}).out, "second 'quoted' line\n");

    // Bad arrays: one line, exit 2, nothing queued.
    for (std::vector<std::string> bad : {std::vector<std::string>{"--array", "5-1"},
                                         {"--array", "0-20000"},
                                         {"--array-file", q.dir() + "/missing"},
                                         {"--array", "1-2", "--slurm"}}) {
        bad.insert(bad.begin(), "submit");
        for (const char* w : {"--", "true"}) bad.push_back(w);
        test::CommandResult refused = q.baton(bad);
        EXPECT_EQ(refused.exit_code, 2) << bad[2] << ": " << refused.err;
        EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    }
    EXPECT_EQ(q.baton({"queue", "--json"}).out, "[]\n");
}

// baton group: three jobs of a group with --parallel 1 run one after another (each asks no CPU, so
// only the group holds them back); `baton group` counts them; a group with open jobs stays.
TEST(Queue, AGroupOfThreeWithParallelOneRunsThemOneAfterAnother) {
    Queue q;
    EXPECT_EQ(q.baton({"group"}).out, "no groups (baton group add NAME --parallel N makes one)\n");
    test::CommandResult r = q.baton({"submit", "--group", "serial", "--", "true"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--group serial: no such group (baton group add serial --parallel N makes it)"),
              std::string::npos)
        << r.err;
    r = q.baton({"group", "add", "serial", "--parallel", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "group serial: 1 at once\n");
    EXPECT_EQ(q.baton({"group", "add", "bad/name"}).exit_code, 2);
    const std::string log = q.dir() + "/group.log";
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 3; ++i) ids.push_back(q.submit({"--group", "serial", "--cpus", "0"}, recorded(log, 0.5)));
    test::CommandResult listed = q.baton({"group", "--json"});
    const json groups = json::parse(listed.out, nullptr, false);
    ASSERT_EQ(groups.size(), 1u) << listed.out;
    EXPECT_EQ(groups[0].value("parallel", 0), 1);
    EXPECT_EQ(groups[0].value("running", 0) + groups[0].value("waiting", 0), 3) << listed.out;
    r = q.baton({"group", "remove", "serial"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("group serial has 3 open job(s)"), std::string::npos) << r.err;
    const json last = q.job(ids[2]);
    EXPECT_EQ(last.value("group", ""), "serial");
    if (last.value("state", "") == "queued") {
        EXPECT_EQ(last.value("waiting", ""),
                  "waiting for one of the 1 running jobs of group serial to end (its --parallel 1)");
    }
    ASSERT_TRUE(q.all_ended(ids, 60));
    std::vector<Interval> ran = intervals(log);
    ASSERT_EQ(ran.size(), 3u);
    std::sort(ran.begin(), ran.end(), [](const Interval& x, const Interval& y) { return x.start < y.start; });
    for (std::size_t k = 0; k + 1 < ran.size(); ++k)
        EXPECT_LE(ran[k].end, ran[k + 1].start) << "jobs " << ran[k].job << " and " << ran[k + 1].job << " overlapped";
    EXPECT_EQ(ran[0].job, ids[0]);
    // Raised to 3: the next three run together; then removed.
    EXPECT_EQ(q.baton({"group", "add", "serial", "--parallel", "3"}).exit_code, 0);
    std::vector<std::int64_t> more;
    for (int i = 0; i < 3; ++i) more.push_back(q.submit({"--group", "serial", "--cpus", "0"}, recorded(log, 0.5)));
    ASSERT_TRUE(q.all_ended(more, 60));
    ran = intervals(log);
    ASSERT_EQ(ran.size(), 6u);
    long double latest_start = 0, earliest_end = 1e30L;
    for (std::size_t k = 3; k < 6; ++k) {
        latest_start = std::max(latest_start, ran[k].start);
        earliest_end = std::min(earliest_end, ran[k].end);
    }
    EXPECT_LT(latest_start, earliest_end) << "the three did not run together";
    r = q.baton({"group", "remove", "serial"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(q.baton({"group", "--json"}).out, "[]\n");
}

// baton edit: a held job takes a new command, name, priority, resources and dependencies and runs
// with them; a running job, a dependency cycle and a request no machine could run are refused.
TEST(Queue, EditChangesAWaitingJobAndRefusesARunningOne) {
    Queue q;
    const std::int64_t running = q.submit({"--cpus", "0"}, "sleep 30");
    const std::int64_t held = q.submit({"--hold", "--name", "first"}, "echo before");
    const std::int64_t later = q.submit({"--after", std::to_string(held)}, "true");
    test::CommandResult r =
        q.baton({"edit", std::to_string(held), "--priority", "7", "--name", "second", "--mem", "64M", "--cpus", "0",
                 "--json", "--", "sh", "-c", "echo \"after $1\"", "sh", "two words"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json edited = json::parse(r.out, nullptr, false);
    EXPECT_EQ(edited.value("name", ""), "second");
    EXPECT_EQ(edited.value("priority", 0), 7);
    EXPECT_EQ(edited.value("state", ""), "held");
    EXPECT_EQ(edited["want"].value("memory_bytes", 0), 64 << 20);
    EXPECT_EQ(edited["want"].value("cpus", 1), 0);
    EXPECT_EQ(q.job(held)["argv"], json({"sh", "-c", "echo \"after $1\"", "sh", "two words"}));
    // Refused: a running job; a cycle; what the machine can never run; nothing to change; not a job.
    r = q.baton({"edit", std::to_string(running), "--priority", "1"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("is running: only a queued or held job is edited"), std::string::npos) << r.err;
    r = q.baton({"edit", std::to_string(held), "--after", std::to_string(later)});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("would wait for itself"), std::string::npos) << r.err;
    r = q.baton({"edit", std::to_string(held), "--cpus", "100000"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("asks for 100000 CPUs"), std::string::npos) << r.err;
    EXPECT_EQ(q.baton({"edit", std::to_string(held)}).exit_code, 2);
    EXPECT_EQ(q.baton({"edit", "999", "--priority", "1"}).exit_code, 1);
    EXPECT_EQ(q.job(held).value("priority", 0), 7) << "a refused edit changes nothing";
    // It runs as edited, and the job after it follows.
    EXPECT_EQ(q.baton({"release", std::to_string(held)}).exit_code, 0);
    EXPECT_EQ(q.baton({"wait", std::to_string(held)}).exit_code, 0);
    EXPECT_EQ(q.baton({"logs", std::to_string(held)}).out, "after two words\n");
    EXPECT_EQ(q.baton({"wait", std::to_string(later)}).exit_code, 0);
    r = q.baton({"edit", std::to_string(held), "--priority", "1"});
    EXPECT_NE(r.err.find("is done: only a queued or held job is edited"), std::string::npos) << r.err;
    EXPECT_EQ(q.baton({"cancel", std::to_string(running), "--grace", "0"}).exit_code, 0);
}

// --delay: the job waits, saying until when, then starts on its own; a bad time is refused at submit.
TEST(Queue, ADelayedJobStartsWhenItsTimeComes) {
    Queue q;
    const std::int64_t id = q.submit({"--delay", "3s"}, "date +%s%3N");
    const std::int64_t submitted = unix_millis();
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    json j = q.job(id);
    EXPECT_EQ(j.value("state", ""), "queued") << j.dump();
    EXPECT_EQ(j.value("waiting", "").rfind("delayed: starts at ", 0), 0u) << j.dump();
    EXPECT_NE(q.baton({"show", std::to_string(id)}).out.find("(in "), std::string::npos);
    EXPECT_EQ(q.baton({"wait", std::to_string(id)}, 30).exit_code, 0);
    const std::int64_t started = std::stoll(q.baton({"logs", std::to_string(id)}).out);
    EXPECT_GE(started, submitted + 2500) << "it started before its time";
    EXPECT_LE(started, submitted + 8000) << "it started long after its time";
    test::CommandResult bad = q.baton({"submit", "--at", "25:00", "--", "true"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--at 25:00: a local time HH:MM[:SS]"), std::string::npos) << bad.err;
}

// [queue] gpus and prefer: jobs get only the configured GPUs, the preferred first; more than the
// pool has is refused at submit.
TEST(Queue, TheConfiguredGpusAreTheQueuesInTheOrderPreferred) {
    Queue q;
    q.kill(SIGTERM);
    ::mkdir((q.dir() + "/baton").c_str(), 0755);
    std::ofstream(q.dir() + "/baton/baton.toml") << "[queue]\ngpus = \"1-3\"\nprefer = \"3\"\n";
    q.start();
    const std::int64_t first = q.submit({"--gpus", "1", "--cpus", "0"}, "sleep 30");
    const std::int64_t second = q.submit({"--gpus", "2", "--cpus", "0"}, "sleep 30");
    test::eventually(
        [&] { return q.job(first).value("state", "") == "running" && q.job(second).value("state", "") == "running"; },
        10, 0.1);
    EXPECT_EQ(q.job(first)["gpu_indices"], json({3})) << q.job(first).dump();
    EXPECT_EQ(q.job(second)["gpu_indices"], json({1, 2})) << q.job(second).dump();
    test::CommandResult r = q.baton({"submit", "--gpus", "4", "--", "true"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("asks for 4 GPU(s)"), std::string::npos) << r.err;
    // The pool as the agent gives it: baton queue --gpus, in its order, with the holders; baton doctor.
    r = q.baton({"queue", "--gpus", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json pool = json::parse(r.out, nullptr, false);
    std::vector<unsigned> order;
    for (const json& g : pool.value("gpus", json::array())) order.push_back(g.value("index", 99u));
    EXPECT_EQ(order, (std::vector<unsigned>{3, 1, 2})) << r.out;
    EXPECT_EQ(pool["gpus"][0]["jobs"], json({first})) << r.out;
    EXPECT_EQ(pool["gpus"][2]["jobs"], json({second})) << r.out;
    const std::string table = q.baton({"queue", "--gpus"}).out;
    EXPECT_NE(table.find("held   job " + std::to_string(first)), std::string::npos) << table;
    const json doctor = json::parse(q.baton({"doctor", "--no-torch", "--json"}).out, nullptr, false);
    bool seen = false;
    for (const json& c : doctor.value("checks", json::array()))
        if (c.value("id", "") == "queue_gpus") {
            seen = true;
            EXPECT_EQ(c.value("detail", ""),
                      "GPU 3, 1, 2 (in the order given; [queue] gpus and prefer), 0 of 3 free now");
        }
    EXPECT_TRUE(seen);
    q.baton({"cancel", std::to_string(first), std::to_string(second), "--grace", "0"});
}

TEST(Queue, AHistoryWrittenByAnOlderBatonOpensAndTakesJobs) {
    // tests/fixtures/history-schema5.db: written by baton at 672831d (schema 5, the release before the
    // queue's jobs table) with `baton run` on the fake NVML and a minute of `baton serve`.
    const std::string old = baton::test::fixture_dir() + "/history-schema5.db";
    Queue q(old);
    // (baton runs --json: one object per line)
    auto runs = [&] {
        std::vector<json> out;
        std::istringstream in(q.baton({"runs", "--json"}).out);
        for (std::string line; std::getline(in, line);) out.push_back(json::parse(line, nullptr, false));
        return out;
    };
    const std::vector<json> listed = runs();
    ASSERT_EQ(listed.size(), 1u) << q.log();
    EXPECT_EQ(listed[0].value("name", ""), "before-the-queue");
    EXPECT_EQ(listed[0].value("state", ""), "finished");
    EXPECT_EQ(listed[0].value("samples", 0), 4);
    test::CommandResult report = q.baton({"report", "1", "--markdown"});
    EXPECT_EQ(report.exit_code, 0) << report.err;
    EXPECT_NE(report.out.find("before-the-queue"), std::string::npos) << report.out;
    // The queue's table was added by the migration: jobs run and are recorded beside the old run.
    const std::int64_t id = q.submit({"--name", "after-the-queue"}, "echo new");
    EXPECT_EQ(q.baton({"wait", std::to_string(id)}).exit_code, 0);
    EXPECT_EQ(q.baton({"logs", std::to_string(id)}).out, "new\n");
    const std::vector<json> after = runs();
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[0].value("name", "") + " " + after[1].value("name", ""), "before-the-queue after-the-queue");
}

// What /proc says of a process: its command line (NULs as spaces) and its parent.
std::string command_line(pid_t pid) {
    std::string text = test::read_text("/proc/" + std::to_string(pid) + "/cmdline");
    while (!text.empty() && text.back() == '\0') text.pop_back();
    std::replace(text.begin(), text.end(), '\0', ' ');
    return text;
}
pid_t parent_of(pid_t pid) {
    std::istringstream in(test::read_text("/proc/" + std::to_string(pid) + "/status"));
    for (std::string line; std::getline(in, line);)
        if (line.rfind("PPid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(5)));
    return 0;
}

TEST(Queue, SupervisorsComeFromTheJobStarterAndFromTheAgentWithoutIt) {
    Queue q;
    const std::int64_t id = q.submit({}, "sleep 300");
    double until = monotonic_seconds() + 10;
    while (q.job(id).value("state", "") != "running" && monotonic_seconds() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto shim = static_cast<pid_t>(q.job(id).value("pid", 0));
    ASSERT_GT(shim, 0);
    // The supervisor shows as what it is, not as a second `baton serve`, and its parent is the
    // starter, the agent's child.
    EXPECT_EQ(command_line(shim),
              "baton job-shim " + q.dir() + "/state/baton/jobs/" + std::to_string(id) + "/attempt-0");
    const pid_t starter = parent_of(shim);
    EXPECT_EQ(command_line(starter), "baton job-spawner");
    EXPECT_EQ(parent_of(starter), q.pid());
    EXPECT_EQ(q.baton({"cancel", std::to_string(id), "--grace", "1"}).exit_code, 0);
    EXPECT_EQ(q.baton({"wait", std::to_string(id)}).exit_code, 143);

    // Without its starter the agent starts supervisors itself, and says so once.
    ASSERT_EQ(kill(starter, SIGKILL), 0);
    until = monotonic_seconds() + 5;
    while (kill(starter, 0) == 0 && monotonic_seconds() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::int64_t next = q.submit({}, "echo after");
    EXPECT_EQ(q.baton({"wait", std::to_string(next)}).exit_code, 0);
    EXPECT_EQ(q.baton({"logs", std::to_string(next)}).out, "after\n");
    EXPECT_EQ(q.baton({"wait", std::to_string(q.submit({}, "true"))}).exit_code, 0);
    const std::string log = q.log();
    EXPECT_NE(log.find("the agent starts the jobs' supervisors itself from now on"), std::string::npos) << log;
    EXPECT_EQ(log.find("itself from now on"), log.rfind("itself from now on")) << log;
}

TEST(Queue, CudaOutOfMemoryIsRetriedWithBatonRetry) {
    Queue q;
    const std::int64_t id = q.submit({"--on-oom", "retry", "--retries", "2"},
                                     "echo \"attempt ${BATON_RETRY:-0} oom ${BATON_OOM:-0}\"; "
                                     "if [ -z \"$BATON_RETRY\" ]; then echo 'torch.OutOfMemoryError: CUDA out of "
                                     "memory. Tried to allocate 2.00 GiB' >&2; exit 1; fi");
    EXPECT_EQ(q.baton({"wait", std::to_string(id)}).exit_code, 0);
    const json j = q.job(id);
    EXPECT_EQ(j.value("attempt", 0), 1);
    EXPECT_EQ(j.value("state", ""), "done");
    EXPECT_EQ(q.baton({"logs", std::to_string(id)}).out, "attempt 1 oom 1\n");
    // Without --on-oom retry it fails for good.
    const std::int64_t once = q.submit({}, "echo 'RuntimeError: CUDA out of memory.' >&2; exit 1");
    EXPECT_EQ(q.baton({"wait", std::to_string(once)}).exit_code, 1);
    const json f = q.job(once);
    EXPECT_EQ(f.value("attempt", -1), 0);
    EXPECT_NE(f.value("note", "").find("out of GPU memory"), std::string::npos) << f.dump();
}

// A cgroup v2 directory of its own for an agent, marked delegated as systemd's Delegate=yes does;
// removed (with what the agent made in it) at the end. `why` says why there is none here.
struct TestCgroup {
    std::string dir, why;
    TestCgroup() {
        if (geteuid() != 0) {
            why = "needs root to make a cgroup";
            return;
        }
        std::string mount;
        std::istringstream mounts(test::read_text("/proc/self/mountinfo"));
        for (std::string line; std::getline(mounts, line);) {
            const std::size_t dash = line.find(" - cgroup2 ");
            if (dash == std::string::npos) continue;
            std::istringstream f(line.substr(0, dash));
            std::string id, parent, dev, root;
            f >> id >> parent >> dev >> root >> mount;
            break;
        }
        if (mount.empty()) {
            why = "no cgroup v2 hierarchy is mounted";
            return;
        }
        if (test::read_text(mount + "/cgroup.controllers").find("memory") == std::string::npos) {
            why = "cgroup v2 at " + mount + " offers no memory controller (it is cgroup v1's here)";
            return;
        }
        std::istringstream swaps(test::read_text("/proc/swaps"));
        std::string header, swap;
        std::getline(swaps, header);
        if (std::getline(swaps, swap) && !swap.empty()) {
            why = "swap is on: a job past its memory.max would swap instead of being killed";
            return;
        }
        const std::string d = mount + "/baton-test-" + std::to_string(getpid());
        if (::mkdir(d.c_str(), 0755) != 0) {
            why = "cannot create " + d + ": " + std::strerror(errno);
            return;
        }
        dir = d;
        const int sc = open((mount + "/cgroup.subtree_control").c_str(), O_WRONLY);
        if (sc >= 0) {
            (void)!write(sc, "+memory", 7);
            close(sc);
        }
        if (::setxattr(dir.c_str(), "trusted.delegate", "1", 1, 0) != 0) {
            why = std::string("cannot mark the test's cgroup delegated: ") + std::strerror(errno);
            return;
        }
        if (test::read_text(dir + "/cgroup.controllers").find("memory") == std::string::npos)
            why = "the memory controller cannot be enabled below " + mount;
    }
    ~TestCgroup() {
        if (dir.empty()) return;
        // Leaves first; whatever is still in them is killed (cgroup.kill, Linux 5.14+).
        for (int pass = 0; pass < 50; ++pass) {
            std::vector<std::string> dirs;
            std::error_code ec;
            for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
                 !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
                if (it->is_directory()) dirs.push_back(it->path());
            std::sort(dirs.rbegin(), dirs.rend());
            dirs.push_back(dir);
            bool all = true;
            for (const std::string& d : dirs) {
                std::ofstream(d + "/cgroup.kill") << "1";
                all = (::rmdir(d.c_str()) == 0 || errno == ENOENT) && all;
            }
            if (all) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
};

// Where the kernel offers a writable cgroup v2 memory controller (root on Ubuntu 22.04+, the GPU
// machine; a skip that says why elsewhere): a real job past its --mem 64M is killed by its cgroup's
// OOM killer, recorded failed and out of memory (not lost: its supervisor lives outside the
// cgroup), and --on-oom retry runs it again with BATON_OOM=1.
TEST(Queue, AJobPastItsMemIsFailedOutOfMemoryAndRetried) {
    TestCgroup cg;
    if (!cg.why.empty()) GTEST_SKIP() << cg.why;
    Queue q;
    q.kill(SIGTERM);
    q.set_cgroup(cg.dir);
    q.start();
    ASSERT_NE(q.log().find("a cgroup per job under " + cg.dir + "/jobs"), std::string::npos) << q.log();
    const std::string hog = "python3 -c \"x = b'x' * (512 << 20)\"";
    const std::int64_t id = q.submit({"--mem", "64M", "--on-oom", "retry", "--retries", "1"},
                                     "echo \"attempt ${BATON_RETRY:-0} oom ${BATON_OOM:-0}\"; "
                                     "if [ -z \"$BATON_RETRY\" ]; then " +
                                         hog + "; fi");
    EXPECT_EQ(q.baton({"wait", std::to_string(id)}, 120).exit_code, 0);
    const json j = q.job(id);
    EXPECT_EQ(j.value("attempt", 0), 1) << j.dump();
    EXPECT_EQ(j.value("state", ""), "done") << j.dump();
    EXPECT_EQ(q.baton({"logs", std::to_string(id)}).out, "attempt 1 oom 1\n");  // the last attempt's
    // Without --on-oom retry: failed for good, the note saying why, never lost.
    const std::int64_t once = q.submit({"--mem", "64M"}, hog);
    EXPECT_NE(q.baton({"wait", std::to_string(once)}, 120).exit_code, 0);
    const json f = q.job(once);
    EXPECT_EQ(f.value("state", ""), "failed") << f.dump();
    EXPECT_NE(f.value("note", "").find("ran out of its --mem"), std::string::npos) << f.dump();
    q.kill(SIGTERM);
}

TEST(Queue, AnotherUserCanNeitherTouchNorReadAJobAndJobsRunAsTheirOwner) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create a user";
    const std::string user = "batontest" + std::to_string(getpid() % 100000);
    ASSERT_EQ(test::run({"/usr/sbin/useradd", "--no-create-home", "--shell", "/bin/sh", user}).exit_code, 0);
    struct Remove {
        std::string user;
        ~Remove() { test::run({"/usr/sbin/userdel", user}); }
    } remove{user};
    const std::string uid = test::run({"/usr/bin/id", "-u", user}).out;
    Queue q;
    // The system agent's socket: group-accessible to the user (here through the user's own group).
    q.kill(SIGTERM);
    std::ofstream(q.dir() + "/baton/baton.toml") << "";
    ::mkdir((q.dir() + "/baton").c_str(), 0755);
    std::ofstream(q.dir() + "/baton/baton.toml") << "[queue]\nsocket_group = \"" << user << "\"\n";
    q.start();
    const std::int64_t mine = q.submit({}, "sleep 30");
    // The build tree may be out of the user's reach: the client from a copy the user can run.
    const std::string client = q.dir() + "/baton-client";
    ASSERT_EQ(test::run({"/bin/cp", test::baton_binary(), client}).exit_code, 0);
    auto as_user = [&](std::vector<std::string> args) {
        args.insert(args.begin(), {"/usr/bin/setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", client});
        return test::run(args, q.env());
    };
    for (const char* op : {"cancel", "hold", "logs", "pause", "resume", "retry", "restart"}) {
        test::CommandResult r = as_user({op, std::to_string(mine)});
        EXPECT_NE(r.exit_code, 0) << op;
        EXPECT_NE(r.err.find("belongs to root: only its owner or root may"), std::string::npos) << op << ": " << r.err;
    }
    EXPECT_EQ(q.job(mine).value("state", ""), "running");
    // Nor edit a waiting one.
    const std::int64_t waiting = q.submit({"--hold"}, "true");
    test::CommandResult edit = as_user({"edit", std::to_string(waiting), "--priority", "9"});
    EXPECT_EQ(edit.exit_code, 1);
    EXPECT_NE(edit.err.find("belongs to root: only its owner or root may edit it"), std::string::npos) << edit.err;
    EXPECT_EQ(q.job(waiting).value("priority", -1), 0);
    EXPECT_EQ(q.baton({"cancel", std::to_string(waiting)}).exit_code, 0);
    // Nor change or remove a group root added.
    ASSERT_EQ(q.baton({"group", "add", "roots", "--parallel", "2"}).exit_code, 0);
    for (std::vector<std::string> change :
         {std::vector<std::string>{"group", "add", "roots", "--parallel", "9"}, {"group", "remove", "roots"}}) {
        test::CommandResult r = as_user(change);
        EXPECT_EQ(r.exit_code, 1) << change[1];
        EXPECT_NE(r.err.find("group roots was added by root: only they or root may"), std::string::npos) << r.err;
    }
    EXPECT_NE(q.baton({"group"}).out.find("roots  2         0        0        root"), std::string::npos)
        << q.baton({"group"}).out;
    test::CommandResult listed = as_user({"queue"});
    EXPECT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_NE(listed.out.find("root"), std::string::npos) << listed.out;
    // The user's own job runs as the user, with the user's groups, and the user reads its logs.
    test::CommandResult sub = as_user({"submit", "--cwd", "/tmp", "--", "sh", "-c", "id -u; id -G; echo $HOME $USER"});
    ASSERT_EQ(sub.exit_code, 0) << sub.err;
    const std::string theirs = sub.out.substr(0, sub.out.size() - 1);
    EXPECT_EQ(as_user({"wait", theirs}).exit_code, 0);
    const std::string out = as_user({"logs", theirs}).out;
    EXPECT_EQ(out.substr(0, out.find('\n') + 1), uid) << out;
    std::istringstream lines(out);
    std::string line;
    std::getline(lines, line);
    std::getline(lines, line);  // id -G: the job's groups
    std::istringstream groups(line);
    for (std::string g; groups >> g;) EXPECT_NE(g, "0") << "root's group leaked into the job: " << out;
    EXPECT_NE(out.find(" " + user + "\n"), std::string::npos) << out;
    EXPECT_EQ(q.job(std::stoll(theirs)).value("owner", ""), user);
    // Its directory is not the user's to write in: no link planted there can redirect root's writes.
    const std::string job_dir = q.dir() + "/state/baton/jobs/" + theirs + "/attempt-0";
    ASSERT_EQ(access((job_dir + "/stdout").c_str(), F_OK), 0);
    EXPECT_NE(test::run({"/usr/bin/setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", "/usr/bin/ln", "-s",
                         "/etc/passwd", job_dir + "/planted"})
                  .exit_code,
              0);
    // Its Python loads the agent's one stack handler (root's, readable by every job) where the user can
    // reach the agent's directory, as /var/lib/baton (the test's own directory is private).
    for (const std::string& d : {q.dir(), q.dir() + "/state"}) ASSERT_EQ(chmod(d.c_str(), 0711), 0) << d;
    test::CommandResult py = as_user({"submit", "--cwd", "/tmp", "--", "/usr/bin/python3", "-c",
                                      "import sys; m = sys.modules.get('_baton_stacks'); print(m and m.__file__)"});
    ASSERT_EQ(py.exit_code, 0) << py.err;
    const std::string py_id = py.out.substr(0, py.out.size() - 1);
    EXPECT_EQ(as_user({"wait", py_id}).exit_code, 0);
    EXPECT_EQ(as_user({"logs", py_id}).out, q.dir() + "/state/baton/jobs/python/sitecustomize.py\n");
    // The user's clean forgets the user's ended jobs only (not the newest of all, whose id stays taken).
    const std::int64_t roots_ended = q.submit({}, "true");
    EXPECT_EQ(q.baton({"wait", std::to_string(roots_ended)}).exit_code, 0);
    test::CommandResult cleaned = as_user({"queue", "clean", "--json"});
    ASSERT_EQ(cleaned.exit_code, 0) << cleaned.err;
    EXPECT_EQ(json::parse(cleaned.out, nullptr, false)["removed"], json({std::stoll(theirs), std::stoll(py_id)}))
        << cleaned.out;
    EXPECT_EQ(q.job(roots_ended).value("state", ""), "done");
    EXPECT_EQ(q.baton({"cancel", std::to_string(mine), "--grace", "0"}).exit_code, 0);  // root may
}

// baton logs -f and baton wait across a killed and restarted agent: the job runs on, the follower
// says once that the agent went away, then prints the rest from where it was (nothing twice, nothing
// lost) and ends with the job; wait returns the job's status.
TEST(Queue, LogsFollowAndWaitOutliveARestartOfTheAgent) {
    Queue q;
    const std::int64_t id =
        q.submit({"--cpus", "0"}, "for i in 1 2 3 4 5 6 7 8; do echo line $i; sleep 0.4; done; exit 4");
    std::map<std::string, std::string> env = q.env();
    const std::string out = q.dir() + "/follow.out", waited = q.dir() + "/wait.out";
    const int follower = test::start_process({test::baton_binary(), "logs", "-f", std::to_string(id)}, env, out);
    const int waiter = test::start_process({test::baton_binary(), "wait", std::to_string(id)}, env, waited);
    // Whatever fails below, neither outlives the test (a wait for a job of a removed queue would wait for ever).
    struct Reap {
        std::vector<int> pids;
        ~Reap() {
            for (int pid : pids)
                if (::waitpid(pid, nullptr, WNOHANG) == 0) {
                    ::kill(pid, SIGKILL);
                    ::waitpid(pid, nullptr, 0);
                }
        }
    } reap{{follower, waiter}};
    std::this_thread::sleep_for(std::chrono::milliseconds(900));
    q.kill(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // (lines are written meanwhile)
    q.start();
    int status = 0;
    const double until = monotonic_seconds() + 30;
    pid_t ended = 0;
    while (monotonic_seconds() < until && (ended = waitpid(follower, &status, WNOHANG)) == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (ended == 0) ::kill(follower, SIGKILL);
    ASSERT_EQ(ended, follower) << "logs -f did not end with the job: " << test::read_text(out);
    reap.pids.erase(reap.pids.begin());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << test::read_text(out);
    const std::string text = test::read_text(out);
    std::string lines;
    for (int i = 1; i <= 8; ++i) lines += "line " + std::to_string(i) + "\n";
    const std::size_t note = text.find("baton: the agent went away");
    ASSERT_NE(note, std::string::npos) << text;
    std::string without = text;
    without.erase(note, text.find('\n', note) + 1 - note);  // (stderr shares the file)
    EXPECT_EQ(without, lines);
    const double wait_until = monotonic_seconds() + 30;
    while (monotonic_seconds() < wait_until && (ended = waitpid(waiter, &status, WNOHANG)) == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(ended, waiter) << "baton wait did not end with the job: " << test::read_text(waited);
    reap.pids.pop_back();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 4) << status << ": " << test::read_text(waited);
}

// baton queue --watch: a frame every --interval (to a pipe: one after another under their time), a job
// submitted meanwhile in the later frames, the agent's absence said in a frame without ending the watch.
TEST(Queue, QueueWatchDrawsAFrameEveryIntervalAndOutlivesTheAgent) {
    Queue q;
    const std::string out = q.dir() + "/watch.out";
    const int watcher =
        test::start_process({test::baton_binary(), "queue", "--watch", "--interval", "0.2", "--all"}, q.env(), out);
    const auto frames_now = [&] {
        const std::string t = test::read_text(out);
        std::size_t n = 0;
        for (std::size_t at = t.find("every 0.2s: baton queue --all"); at != std::string::npos;
             at = t.find("every 0.2s: baton queue --all", at + 1))
            ++n;
        return n;
    };
    EXPECT_TRUE(test::eventually([&] { return frames_now() >= 2; }, 10));  // the watch draws before the job
    const std::int64_t id = q.submit({"--name", "watched-job"}, "true");
    EXPECT_TRUE(test::eventually([&] { return test::read_text(out).find("watched-job") != std::string::npos; }, 10));
    q.kill(SIGKILL);
    EXPECT_TRUE(test::eventually(
        [&] { return test::read_text(out).find("(asked again in a moment)") != std::string::npos; }, 10));
    q.start();
    const std::size_t frames_at_restart = frames_now();
    EXPECT_TRUE(test::eventually([&] { return frames_now() >= frames_at_restart + 2; }, 10));  // drawn again after
    ::kill(watcher, SIGTERM);
    int status = 0;
    waitpid(watcher, &status, 0);
    const std::string text = test::read_text(out);
    std::vector<std::string> frames;
    for (std::size_t at = text.find("every 0.2s: baton queue --all"); at != std::string::npos;) {
        const std::size_t next = text.find("every 0.2s: baton queue --all", at + 1);
        frames.push_back(text.substr(at, next == std::string::npos ? std::string::npos : next - at));
        at = next;
    }
    ASSERT_GE(frames.size(), 6u) << text;
    EXPECT_EQ(frames.front().find("watched-job"), std::string::npos) << frames.front();
    EXPECT_NE(frames.back().find(std::to_string(id) + " "), std::string::npos) << frames.back();
    EXPECT_NE(frames.back().find("watched-job"), std::string::npos) << frames.back();
    EXPECT_NE(text.find("(asked again in a moment)"), std::string::npos) << text;
    EXPECT_EQ(text.find("\x1b["), std::string::npos) << "no escape sequences to a pipe";
    test::CommandResult r = q.baton({"queue", "--watch", "--json"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--watch draws the table again and again; --json prints it once"), std::string::npos) << r.err;
}

// Completion callbacks: the job's --on-end and the admin's [queue] on_end run when a job ends, with its
// values; one that hangs is killed at [queue] on_end_timeout and the agent goes on serving.
TEST(Queue, OnEndCallbacksRunAndOneThatHangsIsKilledAtItsTimeout) {
    Queue q;
    const std::string said = q.dir() + "/said", pid_file = q.dir() + "/callback.pid";
    q.kill(SIGTERM);
    ::mkdir((q.dir() + "/baton").c_str(), 0755);
    std::ofstream(q.dir() + "/baton/baton.toml")
        << "[queue]\non_end = \"echo admin {id} {status} >> " << said << "\"\non_end_timeout = \"1s\"\n";
    q.start();
    const std::int64_t failed =
        q.submit({"--name", "it's mine", "--on-end",
                  "echo own {id} {name} {status} {exit} {user} \"$BATON_JOB_STATUS\" >> " + said},
                 "exit 3");
    EXPECT_EQ(q.baton({"wait", std::to_string(failed)}).exit_code, 3);
    const std::string me = test::run({"/usr/bin/id", "-un"}).out;
    const std::string f = std::to_string(failed);
    const std::string expected_own = "own " + f + " it's mine failed 3 " + me.substr(0, me.size() - 1) + " failed\n";
    auto has = [&](const std::string& line) {
        for (int i = 0; i < 100 && test::read_text(said).find(line) == std::string::npos; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return test::read_text(said).find(line) != std::string::npos;
    };
    EXPECT_TRUE(has(expected_own)) << test::read_text(said);
    EXPECT_TRUE(has("admin " + f + " failed\n")) << test::read_text(said);
    // A job cancelled before it started ends too.
    const std::int64_t held = q.submit({"--hold"}, "true");
    EXPECT_EQ(q.baton({"cancel", std::to_string(held)}).exit_code, 0);
    EXPECT_TRUE(has("admin " + std::to_string(held) + " cancelled\n")) << test::read_text(said);

    const std::int64_t hangs = q.submit({"--on-end", "echo $$ > " + pid_file + "; exec sleep 60"}, "true");
    EXPECT_EQ(q.baton({"wait", std::to_string(hangs)}).exit_code, 0);
    for (int i = 0; i < 100 && test::read_text(pid_file).empty(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string pid_text = test::read_text(pid_file);
    ASSERT_FALSE(pid_text.empty());
    const pid_t callback = static_cast<pid_t>(std::stol(pid_text));
    auto alive = [&] {
        const std::string stat = test::read_text("/proc/" + std::to_string(callback) + "/stat");
        return !stat.empty() && stat.find(") Z ") == std::string::npos;
    };
    for (int i = 0; i < 100 && alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(alive()) << "the hanging callback was not killed";
    const std::string log = q.log();
    EXPECT_NE(log.find("baton: job " + std::to_string(hangs) +
                       "'s --on-end command still ran after 1s (its timeout, [queue] on_end_timeout): killed"),
              std::string::npos)
        << log;
    EXPECT_EQ(log.find("baton: job " + f + "'s --on-end command"), std::string::npos) << "it exited 0: unsaid";
    EXPECT_EQ(q.baton({"wait", std::to_string(q.submit({}, "true"))}).exit_code, 0) << "the agent goes on";
}

// [queue] idle_policy on jobs whose GPUs sit at 0 % (the fake GPUs are idle): warn notes it and logs
// it, cancel ends the job with the reason, requeue sends it back as its next attempt; a CPU job and a
// paused job are never judged.
TEST(Queue, TheIdlePolicyWarnsCancelsOrRequeuesAJobAtZeroPercent) {
    Queue q;
    auto configure = [&](const std::string& policy) {
        q.kill(SIGTERM);
        ::mkdir((q.dir() + "/baton").c_str(), 0755);
        std::ofstream(q.dir() + "/baton/baton.toml")
            << "[queue]\nidle_policy = \"" << policy << "\"\nidle_minutes = 0.05\n";  // (3 s)
        q.start();
    };
    auto eventually = [](const std::function<bool()>& done, double seconds) {
        return test::eventually(done, seconds, 0.1);  // each look runs baton show
    };
    configure("warn");
    const std::int64_t warned = q.submit({"--gpus", "1", "--cpus", "0"}, "sleep 60");
    const std::int64_t cpu = q.submit({"--cpus", "0"}, "sleep 60");
    const std::int64_t paused = q.submit({"--gpus", "1", "--cpus", "0"}, "sleep 60");
    ASSERT_TRUE(eventually([&] { return q.job(paused).value("state", "") == "running"; }, 10));
    EXPECT_EQ(q.baton({"pause", std::to_string(paused)}).exit_code, 0);
    ASSERT_TRUE(eventually([&] { return q.job(warned).value("note", "").rfind("idle: its GPU ", 0) == 0; }, 15))
        << q.job(warned).dump();
    EXPECT_EQ(q.job(warned).value("state", ""), "running");
    EXPECT_NE(q.log().find("baton: job " + std::to_string(warned) + ": its GPU "), std::string::npos) << q.log();
    EXPECT_NE(q.log().find("([queue] idle_policy = warn)"), std::string::npos) << q.log();

    configure("cancel");  // (the jobs run on without the agent, and are re-adopted)
    ASSERT_TRUE(eventually([&] { return q.job(warned).value("state", "") == "cancelled"; }, 20))
        << q.job(warned).dump();
    const std::string note = q.job(warned).value("note", "");
    EXPECT_EQ(note.rfind("cancelled: its GPU ", 0), 0u) << note;
    EXPECT_NE(note.find(" at 0 % for "), std::string::npos) << note;
    EXPECT_NE(note.find("([queue] idle_policy)"), std::string::npos) << note;
    EXPECT_EQ(q.job(cpu).value("state", ""), "running") << "a CPU job is never judged";
    EXPECT_EQ(q.job(paused).value("state", ""), "running") << "a paused job is idle on purpose";

    configure("requeue");
    const std::int64_t requeued = q.submit({"--gpus", "1", "--cpus", "0"}, "echo ran; sleep 60");
    ASSERT_TRUE(eventually([&] { return q.job(requeued).value("attempt", 0) >= 1; }, 20)) << q.job(requeued).dump();
    const json j = q.job(requeued);
    EXPECT_EQ(j.value("note", "").rfind("requeued: its GPU ", 0), 0u) << j.dump();
    EXPECT_NE(j.value("state", ""), "cancelled") << j.dump();
    q.baton({"cancel", std::to_string(requeued), std::to_string(cpu), std::to_string(paused), "--grace", "0"});
}

TEST(Queue, KillNineOfTheAgentLosesAndRepeatsNothing) {
    Queue q;
    const std::string ran = q.dir() + "/ran";
    std::mt19937 rng(11);
    std::vector<std::int64_t> ids;
    int submitted = 0;
    for (int round = 0; round < 20; ++round) {
        // Jobs flow in while the agent is killed at a random moment.
        for (int k = 0; k < 2 && submitted < 30; ++k, ++submitted)
            // (0.4 to 0.9 s: long enough that some still run when the next agent starts, and are re-adopted)
            ids.push_back(q.submit({}, "echo $BATON_JOB_ID >> " + ran + "; sleep 0." + std::to_string(4 + rng() % 6)));
        std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
        q.kill(SIGKILL);
        q.start();
    }
    while (submitted < 30) {
        ids.push_back(q.submit({}, "echo $BATON_JOB_ID >> " + ran));
        ++submitted;
    }
    ASSERT_TRUE(q.all_ended(ids, 60)) << q.baton({"queue"}).out;
    std::map<std::int64_t, int> times;
    std::istringstream in(test::read_text(ran));
    for (std::int64_t id; in >> id;) ++times[id];
    for (std::int64_t id : ids) {
        EXPECT_EQ(times[id], 1) << "job " << id << " ran " << times[id] << " times";
        EXPECT_EQ(q.job(id).value("state", ""), "done") << q.job(id).dump();
    }
    // Each re-adopted job was watched to its end: it has its run in the history.
    std::istringstream log(q.log());
    int readopted = 0;
    for (std::string line; std::getline(log, line);) {
        long long id = 0;
        if (std::sscanf(line.c_str(), "baton: job %lld re-adopted", &id) != 1) continue;
        ++readopted;
        EXPECT_TRUE(q.job(id).contains("run_id"))
            << "job " << id << " was not watched to its end: " << q.job(id).dump();
    }
    EXPECT_GT(readopted, 0);
}
