// The HTTP side of baton serve: libevent's evhttp on one event-loop thread (docs/architecture.md
// says why libevent and not libmicrohttpd). Requests are small GETs answered from memory, so one
// thread serves them all; idle and slow clients cost a descriptor and a few KiB each and are
// closed after the timeout, and headers past the size limit get 400 and the connection closed,
// all by libevent.
// Thread: run() owns the loop; stop() may be called from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/listen_address.hpp"

struct event_base;
struct evhttp;
struct evhttp_request;
struct event;

namespace baton::serve {

struct HttpRequest {
    std::string method;                        // "GET", "HEAD", "POST", ...
    std::string path;                          // as sent, without the query ("/api/v1/history")
    std::map<std::string, std::string> query;  // decoded; a repeated key keeps the last value
    bool query_malformed = false;              // the query string could not be decoded
    std::string authorization;                 // the Authorization header, "" when absent
    std::string host;                          // the Host header as sent, "" when absent
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
    ListenAddress address;
    double timeout_seconds = 10;           // a connection idle (or trickling) this long is closed
    std::size_t max_header_bytes = 16384;  // request line and headers together
};

class HttpServer {
  public:
    // Binds the socket (an error says why: "address already in use") and prepares the loop.
    static Result<std::unique_ptr<HttpServer>> listen(const HttpServerOptions& options, HttpHandler handler);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    int port() const { return port_; }  // the bound port (the one the kernel chose for port 0)

    // Calls `on_signal(sig)` in the loop for each of `signals` that arrives (the process's
    // handlers for them are replaced while run() runs); runs until stop().
    void run(const std::vector<int>& signals, const std::function<void(int)>& on_signal);
    // Ends run() after the request being answered, if any.
    void stop();

  private:
    HttpServer() = default;
    static void on_request(::evhttp_request* req, void* self);

    event_base* base_ = nullptr;
    evhttp* http_ = nullptr;
    event* wake_ = nullptr;  // stop() from another thread
    int wake_pipe_[2] = {-1, -1};
    int port_ = 0;
    HttpHandler handler_;
    std::function<void(int)> on_signal_;
};

}  // namespace baton::serve
