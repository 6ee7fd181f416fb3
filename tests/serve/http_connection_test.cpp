// The keep-alive client against a small server on loopback that counts its connections: asks
// reuse one connection, a connection the server dropped while idle is replaced without an error,
// a silent server costs one deadline, and a stop (the cancel fd) ends a wait at once.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "core/clock.hpp"
#include "serve/http_connection.hpp"

using namespace baton;
using serve::HttpConnection;

namespace {

enum class Behaviour { answer, answer_then_drop, silent };

// Serves "HTTP/1.1 200" with the request's path as the body, on 127.0.0.1, one connection at a time.
class CountingServer {
  public:
    explicit CountingServer(Behaviour b) : behaviour_(b) {
        fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
        listen(fd_, 8);
        socklen_t len = sizeof a;
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { run(); });
    }
    ~CountingServer() {
        stop_ = true;
        thread_.join();
        close(fd_);
    }
    std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }
    int accepted() const { return accepted_; }
    std::string last_request() {
        std::lock_guard<std::mutex> lock(mutex_);
        return last_;
    }

  private:
    bool readable(int fd) {
        pollfd p{fd, POLLIN, 0};
        return poll(&p, 1, 20) > 0;
    }
    void run() {
        while (!stop_) {
            if (!readable(fd_)) continue;
            const int c = accept(fd_, nullptr, nullptr);
            if (c < 0) continue;
            ++accepted_;
            std::string in;
            bool open = true;
            while (open && !stop_) {
                if (!readable(c)) continue;
                char buf[4096];
                const ssize_t n = recv(c, buf, sizeof buf, 0);
                if (n <= 0) break;
                in.append(buf, static_cast<std::size_t>(n));
                std::size_t end;
                while ((end = in.find("\r\n\r\n")) != std::string::npos) {
                    const std::string request = in.substr(0, end + 4);
                    in.erase(0, end + 4);
                    {
                        std::lock_guard<std::mutex> lock(mutex_);
                        last_ = request;
                    }
                    if (behaviour_ == Behaviour::silent) continue;
                    const std::string path = request.substr(4, request.find(' ', 4) - 4);
                    const std::string answer =
                        "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(path.size()) + "\r\n\r\n" + path;
                    send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
                    // As an agent whose idle timeout passed: gone, without a word.
                    if (behaviour_ == Behaviour::answer_then_drop) open = false;
                }
            }
            close(c);
        }
    }

    Behaviour behaviour_;
    int fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> accepted_{0};
    std::mutex mutex_;
    std::string last_;
    std::thread thread_;
};

}  // namespace

TEST(HttpConnection, AsksReuseOneConnection) {
    CountingServer server(Behaviour::answer);
    HttpConnection c(server.base());
    for (const char* path : {"/api/v1/snapshot?processes=gpu", "/api/v1/findings", "/api/v1/snapshot"}) {
        Result<serve::HttpAnswer> a = c.get(path, "tok3n", 2);
        ASSERT_TRUE(a.ok()) << a.error().message;
        EXPECT_EQ(a->status, 200);
        EXPECT_EQ(a->body, path);
    }
    EXPECT_EQ(c.connections_opened(), 1);
    EXPECT_EQ(server.accepted(), 1);
    const std::string request = server.last_request();
    EXPECT_NE(request.find("GET /api/v1/snapshot HTTP/1.1\r\n"), std::string::npos) << request;
    EXPECT_NE(request.find("Host: 127.0.0.1:"), std::string::npos);
    EXPECT_NE(request.find("Authorization: Bearer tok3n\r\n"), std::string::npos);
    EXPECT_EQ(request.find("Connection: close"), std::string::npos);
}

TEST(HttpConnection, AConnectionTheServerDroppedIsReplacedWithoutAnError) {
    CountingServer server(Behaviour::answer_then_drop);
    HttpConnection c(server.base());
    for (int i = 0; i < 3; ++i) {
        Result<serve::HttpAnswer> a = c.get("/x", "", 2);
        ASSERT_TRUE(a.ok()) << i << ": " << a.error().message;
        EXPECT_EQ(a->body, "/x");
        usleep(50000);  // the server's close arrives before the next ask
    }
    EXPECT_EQ(c.connections_opened(), 3);
}

TEST(HttpConnection, ASilentServerCostsOneDeadline) {
    CountingServer server(Behaviour::silent);
    HttpConnection c(server.base());
    const double t = monotonic_seconds();
    Result<serve::HttpAnswer> a = c.get("/x", "", 0.3);
    const double took = monotonic_seconds() - t;
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.error().code, ErrorCode::timed_out);
    EXPECT_NE(a.error().message.find("no full answer within 0.3 s"), std::string::npos) << a.error().message;
    EXPECT_GE(took, 0.29);
    EXPECT_LT(took, 1.5);
}

TEST(HttpConnection, TheCancelFdEndsAWaitAtOnce) {
    CountingServer server(Behaviour::silent);
    HttpConnection c(server.base());
    const int cancel = eventfd(0, EFD_CLOEXEC);
    c.set_cancel_fd(cancel);
    std::thread stopper([cancel] {
        usleep(200000);
        const std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = write(cancel, &one, sizeof one);
    });
    const double t = monotonic_seconds();
    Result<serve::HttpAnswer> a = c.get("/x", "", 30);
    stopper.join();
    close(cancel);
    EXPECT_FALSE(a.ok());
    EXPECT_LT(monotonic_seconds() - t, 5);
}

TEST(HttpConnection, NoServerAndBadInputsAreErrors) {
    // A port nothing listens on: bind one, note it, close it.
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
    close(s);
    HttpConnection refused("http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)));
    Result<serve::HttpAnswer> r = refused.get("/", "", 2);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::unavailable);
    EXPECT_NE(r.error().message.find("cannot connect to 127.0.0.1:"), std::string::npos) << r.error().message;

    for (const char* base :
         {"https://a:1", "http://:80", "http://a:0", "http://a:70000", "http://[::1", "http://a b:1"}) {
        HttpConnection c(base);
        Result<serve::HttpAnswer> bad = c.get("/", "", 1);
        ASSERT_FALSE(bad.ok()) << base;
        EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument) << base;
    }
    CountingServer server(Behaviour::answer);
    HttpConnection c(server.base());
    EXPECT_EQ(c.get("no-slash", "", 1).error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(c.get("/a b", "", 1).error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(c.get("/", "tok\r\nX: y", 1).error().code, ErrorCode::invalid_argument);
}

TEST(HttpConnection, OneGetAsksTheServerToClose) {
    CountingServer server(Behaviour::answer);
    Result<serve::HttpAnswer> a = serve::http_get(server.base() + "/api/v1/jobs/slurm%3A1", "", 2);
    ASSERT_TRUE(a.ok()) << a.error().message;
    EXPECT_EQ(a->body, "/api/v1/jobs/slurm%3A1");
    EXPECT_NE(server.last_request().find("Connection: close\r\n"), std::string::npos);
}
