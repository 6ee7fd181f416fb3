// baton serve end to end: the real binary on a free loopback port, with the fake NVML, asked over
// real sockets. The scrape passes promtool, a GPU near OOM shows as an active finding, the token
// rules hold, bad requests get clear 4xx answers, and SIGTERM/SIGHUP do what docs/cli.md says.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <regex>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "store/history.hpp"
#include "store/history_metrics.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::store;

namespace {

using Clock = std::chrono::steady_clock;

// One `baton serve` started by the test, stopped by pid.
class Serve {
  public:
    Serve(std::vector<std::string> args, const std::string& scenario = "eight-busy",
          const std::map<std::string, std::string>& extra_env = {}) {
        stderr_path_ = dir_.path() + "/stderr";
        std::map<std::string, std::string> env = test::fake_env(scenario);
        env["BATON_SYSTEM_CONFIG"] = "/dev/null";
        env["XDG_CONFIG_HOME"] = dir_.path();
        env["XDG_STATE_HOME"] = dir_.path();                // the default history database, here and not in ~
        env["BATON_SOCKET"] = dir_.path() + "/baton.sock";  // the queue's, here and not in /run
        for (const auto& [k, v] : extra_env) env[k] = v;
        args.insert(args.begin(), {test::baton_binary(), "serve"});
        pid_ = fork();
        if (pid_ == 0) {
            const int err = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            const int null = open("/dev/null", O_RDWR);
            dup2(null, 0);
            dup2(null, 1);
            dup2(err, 2);
            for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            _exit(127);
        }
    }
    ~Serve() {
        if (pid_ > 0 && !exited_) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }

    // Waits for "serving on http://HOST:PORT"; false when it exits or 10 s pass first.
    bool ready() {
        static const std::regex serving("serving on http://[^ ]*:([0-9]+)");
        const auto until = Clock::now() + std::chrono::seconds(10);
        while (Clock::now() < until) {
            std::smatch m;
            const std::string err = stderr_text();
            if (std::regex_search(err, m, serving)) {
                port_ = std::stoi(m[1]);
                return true;
            }
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                exited_ = true;
                exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return false;
    }
    int port() const { return port_; }
    std::string stderr_text() const { return test::read_text(stderr_path_); }
    const test::TempDir& dir() const { return dir_; }
    pid_t pid() const { return pid_; }

    // Sends `sig` and waits up to `seconds` for the exit: its code, or -1 (still running, then killed).
    int stop(int sig, double seconds, double* took = nullptr) {
        const auto start = Clock::now();
        kill(pid_, sig);
        while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                exited_ = true;
                if (took) *took = std::chrono::duration<double>(Clock::now() - start).count();
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return -1;
    }
    // Waits for the process to exit on its own (it refused to start): its exit code.
    int exit_code() {
        if (!exited_) {
            int status = 0;
            waitpid(pid_, &status, 0);
            exited_ = true;
            exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        return exit_code_;
    }

  private:
    test::TempDir dir_;
    std::string stderr_path_;
    pid_t pid_ = -1;
    int port_ = 0;
    bool exited_ = false;
    int exit_code_ = -1;
};

struct Reply {
    int status = 0;  // 0: the connection closed without a status line
    std::string headers, body;
};

// One request on its own connection, as sent (`raw`), the answer read to the end (5 s at most).
Reply send_raw(int port, const std::string& raw) {
    Reply r;
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(fd);
        return r;
    }
    std::size_t off = 0;
    while (off < raw.size()) {
        const ssize_t n = send(fd, raw.data() + off, raw.size() - off, MSG_NOSIGNAL);
        if (n <= 0) break;  // the server may close on a request it refuses
        off += static_cast<std::size_t>(n);
    }
    std::string in;
    const auto until = Clock::now() + std::chrono::seconds(5);
    char buf[65536];
    while (Clock::now() < until) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
    }
    close(fd);
    const std::size_t end = in.find("\r\n\r\n");
    if (in.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) return r;
    r.status = std::stoi(in.substr(9, 3));
    r.headers = in.substr(0, end);
    r.body = in.substr(end + 4);
    return r;
}

Reply get(int port, const std::string& path, const std::string& extra_headers = "") {
    return send_raw(port,
                    "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers + "\r\n");
}

// Waits until the agent has taken `n` samples (its health says so).
bool samples_at_least(int port, int n, const std::string& auth = "") {
    static const std::regex samples("\"samples\":([0-9]+)");
    const auto until = Clock::now() + std::chrono::seconds(15);
    while (Clock::now() < until) {
        const Reply r = get(port, "/api/v1/health", auth);
        std::smatch m;
        if (std::regex_search(r.body, m, samples) && std::stoi(m[1]) >= n) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

bool has_line(const std::string& text, const std::string& line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST(ServeCli, MetricsScrapePassesPromtool) {
    Serve s({"--listen", "127.0.0.1:0", "--interval", "0.2"});
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    ASSERT_TRUE(samples_at_least(s.port(), 2));
    get(s.port(), "/metrics");  // so that the next one has baton_scrape_duration_seconds
    const Reply r = get(s.port(), "/metrics");
    EXPECT_EQ(r.status, 200);
    EXPECT_NE(r.headers.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"), std::string::npos) << r.headers;
    s.dir().write("scrape.txt", r.body);
    const auto check = test::run({"/bin/sh", "-c", "promtool check metrics < " + s.dir().path() + "/scrape.txt"});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
    EXPECT_EQ(check.out + check.err, "");
    // Eight GPUs with their UUIDs, and the agent's own families.
    for (int i = 0; i < 8; ++i)
        EXPECT_NE(r.body.find("baton_gpu_utilization_ratio{gpu=\"" + std::to_string(i) + "\",uuid=\"GPU-"),
                  std::string::npos)
            << i;
    EXPECT_NE(r.body.find("baton_build_info{version=\""), std::string::npos);
    EXPECT_NE(r.body.find("baton_scrape_duration_seconds "), std::string::npos);
    EXPECT_NE(r.body.find("baton_self_resident_bytes "), std::string::npos);
    EXPECT_TRUE(has_line(r.body, "baton_findings_total{rule=\"gpu_memory_near_oom\",severity=\"critical\"} 0"));
    EXPECT_EQ(r.body.find("baton_finding_active{rule=\"gpu_memory_near_oom\""), std::string::npos);
    EXPECT_EQ(r.body.find("DCGM_"), std::string::npos);
    // HEAD: the headers alone.
    const Reply head = send_raw(s.port(), "HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(head.status, 200);
    EXPECT_EQ(head.body, "");
    EXPECT_EQ(s.stop(SIGTERM, 5), 0);
}

TEST(ServeCli, GpuNearOomIsAnActiveFinding) {
    Serve s({"--listen", "127.0.0.1:0", "--interval", "0.2", "--dcgm-compat"}, "near-oom");
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    ASSERT_TRUE(samples_at_least(s.port(), 2));
    const Reply m = get(s.port(), "/metrics");
    EXPECT_TRUE(has_line(
        m.body, "baton_finding_active{rule=\"gpu_memory_near_oom\",severity=\"critical\",subject=\"gpu:0\"} 1"))
        << m.body;
    EXPECT_TRUE(has_line(m.body, "baton_findings_total{rule=\"gpu_memory_near_oom\",severity=\"critical\"} 1"));
    EXPECT_NE(m.body.find("DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-00000000-0000-4000-8000-0000000000f1\""),
              std::string::npos);
    const Reply f = get(s.port(), "/api/v1/findings");
    EXPECT_EQ(f.status, 200);
    EXPECT_NE(f.headers.find("Content-Type: application/json"), std::string::npos);
    EXPECT_NE(f.body.find("\"rule\":\"gpu_memory_near_oom\""), std::string::npos) << f.body;
    EXPECT_NE(f.body.find("\"recommendation\":"), std::string::npos);
    const Reply snap = get(s.port(), "/api/v1/snapshot");
    EXPECT_EQ(snap.status, 200);
    EXPECT_NE(snap.body.find("\"uuid\":\"GPU-00000000-0000-4000-8000-0000000000f1\""), std::string::npos);
    EXPECT_EQ(s.stop(SIGINT, 5), 0);
}

// The fixture's Slurm job 4242 was allocated GPUs 0 and 1 (its task's SLURM_JOB_GPUS) on idle GPUs:
// after [serve] idle_allocated_minutes (here 0.6 s) the agent raises gpu_idle_allocated, named by job.
TEST(ServeCli, AnAllocatedGpuLeftIdleIsAFindingNamingTheJob) {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    d.write("baton.toml", "[serve]\nidle_allocated_minutes = 0.01\n");
    Serve s({"--listen", "127.0.0.1:0", "--interval", "0.2", "--config", d.path() + "/baton.toml", "--proc-root",
             d.path() + "/proc", "--sys-root", d.path() + "/sys"},
            "four-idle");
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    std::string body;
    const auto until = Clock::now() + std::chrono::seconds(15);
    while (Clock::now() < until) {
        body = get(s.port(), "/metrics").body;
        if (body.find("baton_finding_active{rule=\"gpu_idle_allocated\"") != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    int active = 0;
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind("baton_finding_active{rule=\"gpu_idle_allocated\",severity=\"warning\",subject=\"gpu:", 0) ==
            0) {
            EXPECT_NE(line.find(",job_id=\"slurm:4242\"} 1"), std::string::npos) << line;
            ++active;
        }
    EXPECT_EQ(active, 2) << body;  // GPUs 0 and 1 by Slurm's numbering, not the other two
    EXPECT_NE(body.find("summary=\"slurm:4242 (alice) has held GPU"), std::string::npos) << body;
    EXPECT_EQ(s.stop(SIGINT, 5), 0);
}

// baton jobstats asks the agent for the fixture's Slurm job 4242 (GPUs 0 and 1 by Slurm's numbering,
// idle): the report for people, baton's JSON, jobstats' summary and its JS1 form, which decodes
// (base64, gunzip) to that summary; a job no agent knows, an agent that is not there, a bad --agent,
// and the token an agent asks for.
TEST(ServeCli, JobstatsReportsAJobFromItsAgentInEveryForm) {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    d.write("token", "jobstats-Token\n");
    d.write("baton.toml", "[serve]\nidle_allocated_minutes = 0.01\n");
    Serve s({"--listen", "127.0.0.1:0", "--interval", "0.2", "--config", d.path() + "/baton.toml", "--proc-root",
             d.path() + "/proc", "--sys-root", d.path() + "/sys", "--token-file", d.path() + "/token"},
            "four-idle");
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    const std::string agent = "http://127.0.0.1:" + std::to_string(s.port());
    const std::map<std::string, std::string> env = {{"BATON_SYSTEM_CONFIG", "/dev/null"},
                                                    {"XDG_CONFIG_HOME", d.path()}};
    auto jobstats = [&](std::vector<std::string> args) {
        args.insert(args.begin(), {test::baton_binary(), "jobstats"});
        return test::run(args, env, 30);
    };
    const std::string token = "--token-file=" + d.path() + "/token";
    // Until the idle allocation's finding is in (0.6 s), so the report holds it.
    test::CommandResult text;
    const auto until = Clock::now() + std::chrono::seconds(15);
    while (Clock::now() < until) {
        text = jobstats({"4242", "--agent", agent, token});
        if (text.out.find("gpu_idle_allocated") != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_EQ(text.out.rfind("slurm:4242 \"resnet\" (user alice, account vision, partition gpu): running, ran ", 0), 0u)
        << text.out;
    EXPECT_NE(text.out.find("of 8 allocated"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("  GPU 0 (allocated): utilisation 0 %"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("  gpu_idle_allocated (warning): slurm:4242 (alice) has held GPU"), std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("  - asked for 2 GPUs and used none"), std::string::npos) << text.out;

    const test::CommandResult js = jobstats({"slurm:4242", "--agent", agent, token, "--json"});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const nlohmann::json doc = nlohmann::json::parse(js.out);
    EXPECT_EQ(doc["job"]["label"], "slurm:4242");
    EXPECT_EQ(doc["job"]["state"], "running");
    EXPECT_EQ(doc["nodes"].size(), 1u);
    EXPECT_EQ(doc["nodes"][0]["cpus"], 8);
    EXPECT_EQ(doc["nodes"][0]["gpus"].size(), 2u);

    const test::CommandResult summary = jobstats({"4242", "--agent", agent, token, "--jobstats"});
    ASSERT_EQ(summary.exit_code, 0) << summary.err;
    const nlohmann::json js_doc = nlohmann::json::parse(summary.out);
    EXPECT_EQ(js_doc["gpus"], 2);
    ASSERT_EQ(js_doc["nodes"].size(), 1u);
    const nlohmann::json node = js_doc["nodes"].begin().value();
    EXPECT_EQ(node["cpus"], 8);
    EXPECT_EQ(node["gpu_utilization"].size(), 2u);
    // The JS1 form, decoded as jobstats does (base64 -d | gzip -d), holds the same figures.
    const test::CommandResult js1 = jobstats({"4242", "--agent", agent, token, "--js1"});
    ASSERT_EQ(js1.exit_code, 0) << js1.err;
    ASSERT_EQ(js1.out.rfind("JS1:", 0), 0u) << js1.out;
    d.write("js1.txt", js1.out.substr(4));
    const test::CommandResult decoded =
        test::run({"/bin/sh", "-c", "base64 -d < " + d.path() + "/js1.txt | gzip -d"}, {}, 10);
    ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
    nlohmann::json from_js1 = nlohmann::json::parse(decoded.out);
    EXPECT_EQ(from_js1["gpus"], 2);
    EXPECT_EQ(from_js1["nodes"].begin().value()["cpus"], 8);

    // The endpoint itself, the label percent-encoded as a URL may carry it.
    const Reply encoded = get(s.port(), "/api/v1/jobs/slurm%3A4242", "Authorization: Bearer jobstats-Token\r\n");
    EXPECT_EQ(encoded.status, 200) << encoded.body;
    EXPECT_NE(encoded.body.find("\"label\":\"slurm:4242\""), std::string::npos) << encoded.body;
    const Reply list = get(s.port(), "/api/v1/jobs", "Authorization: Bearer jobstats-Token\r\n");
    EXPECT_EQ(list.status, 200);
    EXPECT_EQ(list.body.rfind("[{", 0), 0u) << list.body;
    EXPECT_EQ(get(s.port(), "/api/v1/jobs/slurm%3A999", "Authorization: Bearer jobstats-Token\r\n").status, 404);
    // Failures: one line each, exit 1 (nothing to report) or 2 (bad usage).
    const test::CommandResult unknown = jobstats({"999", "--agent", agent, token});
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_NE(unknown.err.find("baton: jobstats: no agent knows job '999'"), std::string::npos) << unknown.err;
    const test::CommandResult no_token = jobstats({"4242", "--agent", agent});
    EXPECT_EQ(no_token.exit_code, 1);
    EXPECT_NE(no_token.err.find("answered 401"), std::string::npos) << no_token.err;
    const test::CommandResult nobody = jobstats({"4242", "--agent", "http://127.0.0.1:1", "--timeout", "2s"});
    EXPECT_EQ(nobody.exit_code, 1);
    EXPECT_NE(nobody.err.find("baton: jobstats: no agent answered"), std::string::npos) << nobody.err;
    const test::CommandResult bad = jobstats({"4242", "--agent", "ftp://x"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_EQ(bad.err, "baton: error: jobstats: --agent 'ftp://x': expected http://HOST:PORT\n");
    const test::CommandResult both = jobstats({"4242", "--json", "--js1"});
    EXPECT_EQ(both.exit_code, 2) << both.err;
    // A second node that never ran it: the summary holds the first, and says which had nothing.
    const test::CommandResult partial = jobstats({"4242", "--agent", agent, "--agent", "http://127.0.0.1:1", token});
    EXPECT_EQ(partial.exit_code, 0) << partial.err;
    EXPECT_NE(partial.err.find("nothing on job '4242' from http://127.0.0.1:1"), std::string::npos) << partial.err;
    EXPECT_EQ(s.stop(SIGINT, 5), 0);
}

TEST(ServeCli, OffLoopbackWithoutATokenRefusesToStart) {
    Serve s({"--listen", "0.0.0.0:0"});
    EXPECT_FALSE(s.ready());
    EXPECT_EQ(s.exit_code(), 2);
    const std::string err = s.stderr_text();
    EXPECT_NE(err.find("baton: error: --listen 0.0.0.0:0 can be reached from other machines"), std::string::npos)
        << err;
    EXPECT_NE(err.find("--token-file"), std::string::npos);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);

    Serve insecure({"--listen", "0.0.0.0:0", "--insecure"});
    ASSERT_TRUE(insecure.ready()) << insecure.stderr_text();
    EXPECT_EQ(
        get(insecure.port(), "/api/v1/health").status == 200 || get(insecure.port(), "/api/v1/health").status == 503,
        true);
    EXPECT_EQ(insecure.stop(SIGTERM, 5), 0);
}

TEST(ServeCli, TheTokenIsAskedOnEveryEndpoint) {
    test::TempDir d;
    d.write("token", "s3cret-Token_42\n");
    Serve s({"--listen", "0.0.0.0:0", "--token-file", d.path() + "/token", "--interval", "0.2"});
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    const std::string good = "Authorization: Bearer s3cret-Token_42\r\n";
    ASSERT_TRUE(samples_at_least(s.port(), 1, good));
    for (const char* path : {"/metrics", "/api/v1/health", "/api/v1/snapshot", "/api/v1/findings", "/api/v1/history",
                             "/api/v1/runs", "/nope"}) {
        const Reply none = get(s.port(), path);
        EXPECT_EQ(none.status, 401) << path;
        EXPECT_NE(none.headers.find("WWW-Authenticate: Bearer"), std::string::npos) << path;
        EXPECT_NE(none.body.find("\"error\":"), std::string::npos) << path;
        EXPECT_EQ(get(s.port(), path, "Authorization: Bearer s3cret-Token_41\r\n").status, 401) << path;
        EXPECT_EQ(get(s.port(), path, "Authorization: Bearer s3cret-Token_42x\r\n").status, 401) << path;
    }
    EXPECT_EQ(get(s.port(), "/metrics", good).status, 200);
    EXPECT_EQ(get(s.port(), "/api/v1/snapshot", good).status, 200);
    EXPECT_EQ(get(s.port(), "/nope", good).status, 404);
    // RFC 6750's query parameter works too (a report opened in a new tab); a wrong one does not.
    EXPECT_EQ(get(s.port(), "/api/v1/snapshot?access_token=s3cret-Token_42").status, 200);
    EXPECT_EQ(get(s.port(), "/api/v1/snapshot?access_token=s3cret-Token_4").status, 401);
    // The page and its files hold no data: they load without the token (the page then asks for it).
    for (const char* path : {"/", "/assets/dashboard.js", "/assets/uPlot.min.js", "/assets/dashboard.css"})
        EXPECT_EQ(get(s.port(), path).status, 200) << path;
    EXPECT_EQ(s.stop(SIGTERM, 5), 0);
}

TEST(ServeCli, MetricsCanBeLeftOpenForScrapers) {
    test::TempDir d;
    d.write("token", "tok\n");
    d.write("baton.toml", "[serve]\nmetrics_without_token = true\ntoken_file = \"" + d.path() + "/token\"\n");
    Serve s({"--listen", "127.0.0.1:0", "--config", d.path() + "/baton.toml"});
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    EXPECT_EQ(get(s.port(), "/metrics").status, 200);
    EXPECT_EQ(get(s.port(), "/api/v1/snapshot").status, 401);
    EXPECT_EQ(get(s.port(), "/api/v1/health", "Authorization: Bearer tok\r\n").status == 401, false);
    EXPECT_EQ(s.stop(SIGTERM, 5), 0);
}

// Off loopback, [serve] metrics_without_token alone (no token) starts the agent with /metrics open
// and every other endpoint refused with one line of why.
TEST(ServeCli, MetricsWithoutTokenOffLoopbackServesMetricsAlone) {
    test::TempDir d;
    d.write("baton.toml", "[serve]\nmetrics_without_token = true\n");
    Serve s({"--listen", "0.0.0.0:0", "--config", d.path() + "/baton.toml", "--interval", "0.2"});
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    EXPECT_NE(s.stderr_text().find("no token: /metrics alone"), std::string::npos) << s.stderr_text();
    const Reply metrics = get(s.port(), "/metrics");
    EXPECT_EQ(metrics.status, 200);
    EXPECT_NE(metrics.body.find("baton_build_info"), std::string::npos);
    for (const char* path :
         {"/api/v1/health", "/api/v1/snapshot", "/api/v1/findings", "/api/v1/history", "/api/v1/runs", "/nope"}) {
        const Reply r = get(s.port(), path);
        EXPECT_EQ(r.status, 403) << path;
        EXPECT_NE(r.body.find("serves /metrics alone"), std::string::npos) << path << r.body;
        EXPECT_EQ(r.body.find("\"samples\""), std::string::npos) << path;
    }
    EXPECT_EQ(s.stop(SIGTERM, 5), 0);
}

// DNS rebinding: a page at evil.example whose name now points at 127.0.0.1 reaches the loopback
// agent with `Host: evil.example`; it is refused (421) on every path, the page's files included,
// while the agent's own names and [serve] allowed_hosts are served.
TEST(ServeCli, LoopbackAgentRefusesForeignHostNames) {
    test::TempDir d;
    d.write("baton.toml", "[serve]\nallowed_hosts = [\"Gpu-01.lan\"]\n");
    Serve s({"--listen", "127.0.0.1:0", "--config", d.path() + "/baton.toml"});
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    const std::string port = std::to_string(s.port());
    auto with_host = [&](const std::string& path, const std::string& host) {
        return send_raw(s.port(), "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
    };
    for (const char* path : {"/", "/assets/dashboard.js", "/metrics", "/api/v1/snapshot", "/api/v1/runs"}) {
        for (const std::string& host : std::vector<std::string>{"evil.example", "evil.example:" + port,
                                                                "localhost.evil.example", "127.0.0.1.nip.io"}) {
            const Reply r = with_host(path, host);
            EXPECT_EQ(r.status, 421) << path << " " << host;
            EXPECT_NE(r.body.find("is not this agent's name"), std::string::npos) << r.body;
            EXPECT_EQ(r.body.find("\"processes\""), std::string::npos);
        }
    }
    for (const std::string& host : std::vector<std::string>{"localhost", "localhost:" + port, "127.0.0.1:" + port,
                                                            "[::1]:" + port, "LOCALHOST.", "gpu-01.lan:" + port})
        EXPECT_EQ(with_host("/api/v1/snapshot", host).status == 421, false) << host;
    // A request without any Host is refused too: a rule that a missing header skipped would be no rule.
    EXPECT_EQ(send_raw(s.port(), "GET /metrics HTTP/1.0\r\n\r\n").status, 421);
    EXPECT_EQ(send_raw(s.port(), "GET /api/v1/snapshot HTTP/1.0\r\n\r\n").status, 421);
    EXPECT_EQ(s.stop(SIGTERM, 5), 0);
}

TEST(ServeCli, BadRequestsGetClearAnswers) {
    Serve s({"--listen", "127.0.0.1:0"});
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    for (const char* path : {"/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/api/v1/../../../etc/passwd",
                             "/metrics/../../etc/shadow", "/api/v2/snapshot"}) {
        const Reply r = get(s.port(), path);
        EXPECT_EQ(r.status, 404) << path;
        EXPECT_EQ(r.body.find("root:"), std::string::npos) << path;
    }
    const Reply post = send_raw(s.port(),
                                "POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
                                "Connection: close\r\n\r\nhi");
    EXPECT_EQ(post.status, 405);
    EXPECT_NE(post.headers.find("Allow: GET, HEAD"), std::string::npos);
    // Headers past 16 KiB: refused, and the server goes on.
    const Reply huge = get(s.port(), "/metrics", "X-Junk: " + std::string(64 * 1024, 'a') + "\r\n");
    EXPECT_TRUE(huge.status == 0 || (huge.status >= 400 && huge.status < 500)) << huge.status;
    const Reply long_query = get(s.port(), "/api/v1/health?" + std::string(64 * 1024, 'q'));
    EXPECT_TRUE(long_query.status == 0 || (long_query.status >= 400 && long_query.status < 500)) << long_query.status;
    const Reply garbage = send_raw(s.port(), "\x01\x02\x03 nonsense\r\n\r\n");
    EXPECT_TRUE(garbage.status == 0 || garbage.status == 400) << garbage.status;
    EXPECT_EQ(get(s.port(), "/metrics").status, 200);
    EXPECT_EQ(s.stop(SIGTERM, 5), 0);
}

TEST(ServeCli, SigtermStopsWithinTwoSecondsWhileScrapedAndWriting) {
    test::TempDir d;
    const std::string db = d.path() + "/baton.db";
    Serve s({"--listen", "127.0.0.1:0", "--interval", "0.1", "--db", db});
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    ASSERT_TRUE(samples_at_least(s.port(), 3));
    // Four clients scrape without pause while the signal comes.
    std::atomic<bool> done{false};
    std::vector<std::thread> scrapers;
    for (int i = 0; i < 4; ++i)
        scrapers.emplace_back([&] {
            while (!done) send_raw(s.port(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    double took = 0;
    EXPECT_EQ(s.stop(SIGTERM, 5, &took), 0);
    done = true;
    for (auto& t : scrapers) t.join();
    EXPECT_LT(took, 2.0);
    EXPECT_NE(s.stderr_text().find("baton: stopped"), std::string::npos);
    auto h = History::open(db, HistoryAccess::read);
    ASSERT_TRUE(h.ok()) << h.error().message;
    EXPECT_EQ(h->integrity(), "ok");
    EXPECT_FALSE(h->minute_table().metric_series()->empty());  // the minute under way was written at the stop
}

TEST(ServeCli, SighupReloadsAGoodConfigAndKeepsTheOldOneOnABadOne) {
    test::TempDir d;
    const std::string config = d.path() + "/baton.toml";
    d.write("baton.toml", "[serve]\nprocess_series = 3\n");
    Serve s({"--listen", "127.0.0.1:0", "--interval", "0.2", "--config", config});
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    ASSERT_TRUE(samples_at_least(s.port(), 1));
    auto process_series = [&] {
        const std::string m = get(s.port(), "/metrics").body;
        int n = 0;
        for (std::size_t at = 0; (at = m.find("\nbaton_process_cpu_seconds_total{", at)) != std::string::npos; ++at)
            ++n;
        return n;
    };
    EXPECT_EQ(process_series(), 3);

    d.write("baton.toml", "[serve]\nprocess_series = \"many\"\n");
    kill(s.pid(), SIGHUP);
    const std::string refused = "baton: the config was not reloaded, the old one stays: " + config +
                                ":2: 'serve.process_series' must be an integer";
    EXPECT_TRUE(test::eventually([&] { return s.stderr_text().find(refused) != std::string::npos; }, 10))
        << s.stderr_text();
    EXPECT_EQ(process_series(), 3);

    d.write("baton.toml", "[serve]\nprocess_series = 1\n");
    kill(s.pid(), SIGHUP);
    EXPECT_TRUE(
        test::eventually([&] { return s.stderr_text().find("baton: config reloaded") != std::string::npos; }, 10))
        << s.stderr_text();
    // The next sample's metrics follow the new config.
    EXPECT_TRUE(test::eventually([&] { return process_series() == 1; }, 10, 0.1)) << process_series();
    EXPECT_EQ(s.stop(SIGTERM, 5), 0);
}

TEST(ServeCli, HistoryComesFromMemoryThenFromTheDatabaseAcrossRestarts) {
    test::TempDir d;
    const std::string db = d.path() + "/state/baton.db";
    {
        Serve s({"--listen", "127.0.0.1:0", "--interval", "0.2", "--db", db}, "near-oom");
        ASSERT_TRUE(s.ready()) << s.stderr_text();
        ASSERT_TRUE(samples_at_least(s.port(), 6));
        const Reply mem = get(s.port(), "/api/v1/history?metric=gpu.memory_used_percent&subject=gpu:0&from=-60");
        EXPECT_EQ(mem.status, 200) << mem.body;
        EXPECT_NE(mem.body.find("\"source\":\"memory\""), std::string::npos) << mem.body;
        EXPECT_NE(mem.body.find(",97,97,97]"), std::string::npos) << mem.body;
        const Reply list = get(s.port(), "/api/v1/history");
        EXPECT_NE(list.body.find("{\"metric\":\"gpu.power_watts\",\"subject\":\"gpu:0\"}"), std::string::npos);
        EXPECT_EQ(get(s.port(), "/api/v1/history?metric=gpu.nope").status, 404);
        EXPECT_EQ(get(s.port(), "/api/v1/history?metric=gpu.power_watts&from=yesterday").status, 400);
        EXPECT_EQ(get(s.port(), "/api/v1/history?metric=gpu.power_watts&from=-10&to=-20").status, 400);
        EXPECT_EQ(get(s.port(), "/api/v1/history?metric=gpu.power_watts&from=0&step=0.001").status, 400);
        EXPECT_EQ(s.stop(SIGTERM, 5), 0);  // writes the minute under way
    }
    {
        auto h = History::open(db, HistoryAccess::read);
        ASSERT_TRUE(h.ok());
        EXPECT_EQ(h->integrity(), "ok");
        EXPECT_FALSE(h->minute_table().metric_minutes("gpu.power_watts", "gpu:0", 0, 1LL << 40)->empty());
    }
    // Restarted, it reads the earlier minutes back; killed, the database stays whole.
    Serve again({"--listen", "127.0.0.1:0", "--interval", "0.2", "--db", db}, "near-oom");
    ASSERT_TRUE(again.ready()) << again.stderr_text();
    ASSERT_TRUE(samples_at_least(again.port(), 2));
    const Reply old = get(again.port(), "/api/v1/history?metric=gpu.power_watts&subject=gpu:0&from=-7200");
    EXPECT_NE(old.body.find("\"source\":\"store\""), std::string::npos) << old.body;
    EXPECT_NE(old.body.find(",612,612,612]"), std::string::npos) << old.body;
    for (int i = 0; i < 5; ++i) get(again.port(), "/metrics");
    EXPECT_EQ(again.stop(SIGKILL, 5), 128 + SIGKILL);
    auto h = History::open(db, HistoryAccess::read);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->integrity(), "ok");
    Serve third({"--listen", "127.0.0.1:0", "--db", db}, "near-oom");
    ASSERT_TRUE(third.ready()) << third.stderr_text();
    EXPECT_NE(
        get(third.port(), "/api/v1/history?metric=gpu.power_watts&subject=gpu:0&from=-7200").body.find(",612,612,612]"),
        std::string::npos);
    EXPECT_EQ(third.stop(SIGTERM, 5), 0);
}

TEST(ServeCli, RunsOfTheHistoryAreServed) {
    test::TempDir d;
    const std::string db = d.path() + "/baton.db";
    auto run = test::run({test::baton_binary(), "--config", "/dev/null", "run", "--db", db, "--name", "tiny", "--quiet",
                          "--", "/bin/sh", "-c", "sleep 1.2"},
                         test::fake_env("near-oom"));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    Serve s({"--listen", "127.0.0.1:0", "--db", db});
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    const Reply list = get(s.port(), "/api/v1/runs");
    EXPECT_EQ(list.status, 200);
    EXPECT_NE(list.body.find("\"name\":\"tiny\""), std::string::npos) << list.body;
    EXPECT_NE(list.body.find("\"state\":\"finished\""), std::string::npos);
    const Reply one = get(s.port(), "/api/v1/runs/1");
    EXPECT_EQ(one.status, 200);
    EXPECT_NE(one.body.find("\"finding_list\":["), std::string::npos) << one.body;
    EXPECT_NE(one.body.find("\"command\":\"/bin/sh -c sleep 1.2\""), std::string::npos) << one.body;
    EXPECT_EQ(get(s.port(), "/api/v1/runs/2").status, 404);
    EXPECT_EQ(get(s.port(), "/api/v1/runs/abc").status, 404);
    EXPECT_EQ(get(s.port(), "/api/v1/runs/99999999999999999999999").status, 404);
    EXPECT_EQ(s.stop(SIGTERM, 5), 0);

    Serve none({"--listen", "127.0.0.1:0", "--no-db"});
    ASSERT_TRUE(none.ready()) << none.stderr_text();
    EXPECT_EQ(get(none.port(), "/api/v1/runs").status, 404);
    EXPECT_EQ(none.stop(SIGTERM, 5), 0);
}
