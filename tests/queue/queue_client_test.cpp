// The client's end against a stand-in agent on a real Unix socket: a refusal's code travels with
// its message (the client acts on the code, never on the text), an agent that is not there or
// hangs up is said so by code, and connect_or_start_agent leaves a running agent alone.
#include "queue/queue_client.hpp"

#include <filesystem>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "queue/queue_socket.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

// Accepts one connection on `listener`, reads one line, answers `reply` (nothing and a hang-up
// when it is empty).
std::thread answer_once(int listener, std::string reply) {
    return std::thread([listener, reply = std::move(reply)] {
        const int fd = ::accept(listener, nullptr, nullptr);
        if (fd < 0) return;
        char c;
        while (::read(fd, &c, 1) == 1 && c != '\n') {
        }
        if (!reply.empty()) (void)!::write(fd, reply.data(), reply.size());
        ::close(fd);
    });
}

Result<nlohmann::json> ask_with(const std::string& socket, const std::string& reply) {
    Result<int> listener = listen_unix(socket, 0600);
    if (!listener.ok()) return listener.error();
    std::thread agent = answer_once(*listener, reply);
    Request r;
    r.op = Op::show;
    r.jobs = {9};
    Result<nlohmann::json> got = ask_agent({{"BATON_SOCKET", socket}}, r, 5);
    agent.join();
    ::close(*listener);
    ::unlink(socket.c_str());
    return got;
}

}  // namespace

TEST(QueueClient, ARefusalsCodeComesBackWithIt) {
    test::TempDir d;
    const std::string sock = d.path() + "/agent.sock";
    Result<nlohmann::json> missing = ask_with(sock, R"({"ok":false,"error":"no job 9 in the queue","code":"not_found"})"
                                                    "\n");
    ASSERT_FALSE(missing.ok());
    EXPECT_TRUE(missing.is(ErrorCode::not_found));
    EXPECT_EQ(missing.error().message, "no job 9 in the queue");

    // An older agent gives no code, a newer one may give one this client does not know: failed.
    EXPECT_TRUE(ask_with(sock, R"({"ok":false,"error":"refused"})"
                               "\n")
                    .is(ErrorCode::failed));
    EXPECT_TRUE(ask_with(sock, R"({"ok":false,"error":"x","code":"from_the_future"})"
                               "\n")
                    .is(ErrorCode::failed));
    Result<nlohmann::json> odd = ask_with(sock, R"({"ok":false,"error":7,"code":[1]})"
                                                "\n");
    ASSERT_FALSE(odd.ok());
    EXPECT_EQ(odd.error().message, "the agent refused");

    Result<nlohmann::json> fine = ask_with(sock, R"({"ok":true,"job":{"id":9}})"
                                                 "\n");
    ASSERT_TRUE(fine.ok()) << fine.error().message;
    EXPECT_EQ((*fine)["job"]["id"], 9);

    EXPECT_TRUE(ask_with(sock, "").is(ErrorCode::disconnected)) << "an agent that hangs up: baton wait asks again";
}

TEST(QueueClient, NoAgentIsUnavailableAndSaysHowToStartOne) {
    test::TempDir d;
    Request r;
    r.op = Op::list;
    Result<nlohmann::json> none = ask_agent({{"BATON_SOCKET", d.path() + "/none.sock"}}, r, 5);
    ASSERT_FALSE(none.ok());
    EXPECT_TRUE(none.is(ErrorCode::unavailable));
    EXPECT_NE(none.error().message.find("baton serve starts one"), std::string::npos) << none.error().message;
}

TEST(QueueClient, ARunningAgentIsUsedNotStartedAgain) {
    test::TempDir d;
    const std::string sock = d.path() + "/agent.sock";
    Result<int> listener = listen_unix(sock, 0600);
    ASSERT_TRUE(listener.ok()) << listener.error().message;
    Result<AgentConnection> c = connect_or_start_agent({{"BATON_SOCKET", sock}}, "/nonexistent/baton", {}, [&] {
        ADD_FAILURE() << "the log's path was asked for, with an agent answering";
        return d.path() + "/log/agent.log";
    });
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_FALSE(c->started);
    EXPECT_FALSE(std::filesystem::exists(d.path() + "/log")) << "nothing is made for an agent not started";
    ::close(c->fd);
    ::close(*listener);
}
