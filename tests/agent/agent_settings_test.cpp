// baton serve's settings from its flags over the config, and the queue's options from the
// machine: decided before anything starts, so each rule is checked here without a server.
#include <gtest/gtest.h>
#include <unistd.h>

#include "agent/agent_settings.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::agent;
using baton::test::TempDir;

TEST(AgentSettings, LoopbackNeedsNoTokenAndAnswersOnlyItsOwnNames) {
    Config c;
    c.serve.allowed_hosts = {"box.example"};
    Result<ServeSettings> s = serve_settings(ServeFlags{}, c);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->listen.text(), "127.0.0.1:22866");
    EXPECT_EQ(s->interval, 1);
    EXPECT_TRUE(s->service.token.empty());
    EXPECT_FALSE(s->service.api_closed);
    EXPECT_EQ(s->service.allowed_hosts,
              (std::vector<std::string>{"localhost", "127.0.0.1", "[::1]", "127.0.0.1", "box.example"}));
    ServeFlags v6;
    v6.listen = "[::1]:0";
    s = serve_settings(v6, c);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->service.allowed_hosts[3], "[::1]");
}

TEST(AgentSettings, FlagsOverTheConfig) {
    Config c;
    c.serve.interval_seconds = 5;
    c.serve.listen = "127.0.0.1:7000";
    c.thresholds.cpu_alarm_percent = 77;
    Result<ServeSettings> s = serve_settings(ServeFlags{}, c);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->interval, 5);
    EXPECT_EQ(s->service.interval_seconds, 5);
    EXPECT_EQ(s->listen.port, 7000);
    EXPECT_FALSE(s->service.prometheus.dcgm_compat);
    EXPECT_EQ(s->thresholds.cpu_alarm_percent, 77);
    ServeFlags f;
    f.interval = 0.5;
    f.listen = "127.0.0.1:0";
    f.dcgm_compat = true;
    s = serve_settings(f, c);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->interval, 0.5);
    EXPECT_EQ(s->listen.port, 0);
    EXPECT_TRUE(s->service.prometheus.dcgm_compat);
    c.serve.dcgm_compat = true;
    EXPECT_TRUE(serve_settings(ServeFlags{}, c)->service.prometheus.dcgm_compat);
}

TEST(AgentSettings, OffLoopbackATokenOrAnExplicitChoice) {
    Config c;
    ServeFlags f;
    f.listen = "0.0.0.0:22866";
    Result<ServeSettings> s = serve_settings(f, c);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(s.error().is(ErrorCode::invalid_argument));
    EXPECT_EQ(
        s.error().message.rfind("--listen 0.0.0.0:22866 can be reached from other machines: give --token-file", 0), 0u);
    // Prometheus alone may scrape.
    c.serve.metrics_without_token = true;
    s = serve_settings(f, c);
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s->service.api_closed);
    EXPECT_TRUE(s->service.metrics_without_token);
    EXPECT_TRUE(s->service.allowed_hosts.empty());  // any Host: other machines name it as they will
    // --insecure: everything, no token.
    c.serve.metrics_without_token = false;
    f.insecure = true;
    s = serve_settings(f, c);
    ASSERT_TRUE(s.ok());
    EXPECT_FALSE(s->service.api_closed);
    // A token file: its first line.
    TempDir d;
    d.write("token", "s3cret-token-of-enough-length\n");
    f.insecure = false;
    f.token_file = d.path() + "/token";
    s = serve_settings(f, c);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->service.token, "s3cret-token-of-enough-length");
    f.token_file = d.path() + "/missing";
    s = serve_settings(f, c);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(s.error().is(ErrorCode::invalid_argument));
    f.token_file.clear();
    f.listen = "nowhere:port";
    EXPECT_TRUE(serve_settings(f, c).error().is(ErrorCode::invalid_argument));
}

TEST(AgentSettings, TheQueueHandsOutThisMachine) {
    Config c;
    c.queue.free_memory_percent = 7;
    QueueMachine m;
    m.env = {{"BATON_SOCKET", "/run/user/1000/b.sock"}};
    m.cpus = {0, 1, 2, 3};
    m.memory_bytes = std::uint64_t{64} << 30;
    SamplerOptions so;
    so.sys_root = "/fixture/sys";
    Result<queue::QueueServerOptions> o = queue_options(ServeFlags{}, c, "/state/baton/baton.db", so, m);
    ASSERT_TRUE(o.ok()) << o.error().message;
    EXPECT_EQ(o->socket_path, "/run/user/1000/b.sock");
    EXPECT_EQ(o->jobs_dir, "/state/baton/jobs");
    EXPECT_EQ(o->db_path, "/state/baton/baton.db");
    EXPECT_EQ(o->pool.cpus, m.cpus);
    EXPECT_EQ(o->pool.memory_bytes, m.memory_bytes);
    EXPECT_EQ(o->pool.sys_root, "/fixture/sys");
    EXPECT_EQ(o->pool.free_memory_percent, 7);
    EXPECT_FALSE(o->pool.allowed_gpus);  // outside Slurm: every GPU
    EXPECT_FALSE(o->uuid_visible_devices);
    // --socket wins; inside an allocation its GPUs, named by UUID.
    ServeFlags f;
    f.socket = "/tmp/q.sock";
    m.env = {{"SLURM_JOB_ID", "41"}, {"SLURM_JOB_GPUS", "2,3"}};
    o = queue_options(f, c, "/db/baton.db", so, m);
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(o->socket_path, "/tmp/q.sock");
    ASSERT_TRUE(o->pool.allowed_gpus);
    EXPECT_EQ(*o->pool.allowed_gpus, (std::vector<std::string>{"2", "3"}));
    EXPECT_TRUE(o->uuid_visible_devices);
    // No place for the socket (a user's agent without XDG_RUNTIME_DIR; root's has /run/baton): why
    // the queue cannot run.
    m.env.clear();
    if (geteuid() != 0) {
        EXPECT_FALSE(queue_options(ServeFlags{}, c, "/db/baton.db", so, m).ok());
        m.env = {{"XDG_RUNTIME_DIR", "/run/user/1000"}};
        EXPECT_EQ(queue_options(ServeFlags{}, c, "/db/baton.db", so, m)->socket_path,
                  "/run/user/1000/baton/baton.sock");
    }
}
