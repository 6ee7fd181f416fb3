// GETs to one baton agent over one TCP connection kept open between them (HTTP/1.1 keep-alive):
// `baton top --hosts` asks each host every second, and a new connection each time would cost a
// handshake and a socket in TIME_WAIT per request. Plain HTTP with the bearer token when one is
// given, bounded in time and size; no TLS, no redirects. One thread uses one connection.
#pragma once

#include <string>

#include "core/result.hpp"

namespace baton::serve {

struct HttpAnswer {
    int status = 0;
    std::string body;
};

struct HttpUrl {
    std::string host;  // a name, an IPv4 address, or an IPv6 one (without its brackets)
    std::string port;
    std::string path;  // "/" when none was given
};

// http://HOST[:PORT][/PATH]; HOST a name, an IPv4 address or an IPv6 one in brackets.
Result<HttpUrl> parse_http_url(const std::string& url);

class HttpConnection {
  public:
    // `base`: http://HOST:PORT (a path after it is ignored). An invalid one fails every get().
    explicit HttpConnection(const std::string& base);
    ~HttpConnection();
    HttpConnection(const HttpConnection&) = delete;
    HttpConnection& operator=(const HttpConnection&) = delete;

    // GET `path` ("/api/v1/snapshot?x=1"). Reuses the open connection when there is one; if the
    // agent had closed it meanwhile (its idle timeout), connects again and asks once more. Errors:
    // invalid_argument (a bad base or path), unavailable (no connection), timed_out (no full answer
    // within `timeout_seconds`, connecting included), failed (not HTTP, or over 64 MiB). After an
    // error the connection is closed; the next get() opens a new one.
    Result<HttpAnswer> get(const std::string& path, const std::string& token, double timeout_seconds);

    // Asks the agent to close after this answer ("Connection: close"): for a single request.
    void set_keep_alive(bool keep) { keep_alive_ = keep; }
    // A file descriptor that, once readable, ends the wait of a get() under way (as a timeout): a
    // poller that stops does not wait out its hosts' deadlines. -1: none.
    void set_cancel_fd(int fd) { cancel_fd_ = fd; }
    void close();
    // Connections opened so far (the tests check that the polls reuse one).
    int connections_opened() const { return opened_; }

  private:
    Result<HttpAnswer> exchange(const std::string& request, double deadline, bool& nothing_came);

    Result<HttpUrl> url_;
    int fd_ = -1;
    bool keep_alive_ = true;
    int cancel_fd_ = -1;
    int opened_ = 0;
};

// One GET on a connection of its own, closed after the answer (`baton jobstats`).
Result<HttpAnswer> http_get(const std::string& url, const std::string& token, double timeout_seconds);

}  // namespace baton::serve
