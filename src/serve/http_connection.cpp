#include "serve/http_connection.hpp"

#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/text_parse.hpp"
#include "serve/http_response.hpp"

namespace baton::serve {

namespace {

// Waits for `events` on fd until the deadline; false when it passed, when `cancel` (-1: none)
// became readable, or when poll failed.
bool wait_for(int fd, short events, double deadline, int cancel) {
    for (;;) {
        const double left = deadline - monotonic_seconds();
        if (left <= 0) return false;
        pollfd p[2] = {{fd, events, 0}, {cancel, POLLIN, 0}};
        const int n = ::poll(p, cancel >= 0 ? 2 : 1, static_cast<int>(left * 1000) + 1);
        if (n > 0) return p[1].revents == 0;
        if (n < 0 && errno != EINTR) return false;
    }
}

// 2 -> "2", 0.5 -> "0.5"
std::string seconds_text(double s) {
    return fmt::format("{:g}", s);
}

// Connects to u within the deadline: every address the name has, in getaddrinfo's order.
Result<int> connect_to(const HttpUrl& u, double deadline, int cancel) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = ::getaddrinfo(u.host.c_str(), u.port.c_str(), &hints, &found); rc != 0)
        return Error{u.host + ": " + ::gai_strerror(rc), ErrorCode::unavailable};
    int fd = -1;
    std::string why = "no address";
    bool late = false;
    for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        int err = errno;
        if (err == EINPROGRESS && wait_for(fd, POLLOUT, deadline, cancel)) {
            socklen_t len = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err == 0) break;
        }
        late = late || err == EINPROGRESS;
        why = err == EINPROGRESS ? "no answer in time" : std::strerror(err);
        ::close(fd);
        fd = -1;
    }
    ::freeaddrinfo(found);
    if (fd < 0)
        return Error{"cannot connect to " + u.host + ":" + u.port + ": " + why,
                     late ? ErrorCode::timed_out : ErrorCode::unavailable};
    // Requests are small and one at a time: send each at once, not after the last answer's ACK.
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

// HOST:PORT as a URL and a Host header write it: an IPv6 address in brackets.
std::string authority(const HttpUrl& u) {
    return (u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host) + ":" + u.port;
}

}  // namespace

Result<HttpUrl> parse_http_url(const std::string& url) {
    const std::string scheme = "http://";
    const Error bad{"'" + url + "': expected http://HOST:PORT/...", ErrorCode::invalid_argument};
    if (url.rfind(scheme, 0) != 0) return bad;
    const std::string rest = url.substr(scheme.size());
    const std::size_t slash = rest.find('/');
    HttpUrl u;
    u.path = slash == std::string::npos ? "/" : rest.substr(slash);
    const std::string host_port = rest.substr(0, slash);
    std::size_t colon;
    if (!host_port.empty() && host_port.front() == '[') {
        const std::size_t close = host_port.find(']');
        if (close == std::string::npos) return Error{"'" + url + "': unclosed [", ErrorCode::invalid_argument};
        u.host = host_port.substr(1, close - 1);
        colon = host_port.find(':', close);
        if (colon != std::string::npos && colon != close + 1) return bad;
    } else {
        colon = host_port.rfind(':');
        u.host = host_port.substr(0, colon);
    }
    u.port = colon == std::string::npos ? "80" : host_port.substr(colon + 1);
    const std::optional<unsigned> port = text::parse_digits<unsigned>(u.port);
    if (u.host.empty() || !port || *port == 0 || *port > 65535) return bad;
    for (char c : u.host + u.path)
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
            return Error{"'" + url + "': the URL holds a space or a control character", ErrorCode::invalid_argument};
    return u;
}

HttpConnection::HttpConnection(const std::string& base) : url_(parse_http_url(base)) {}

HttpConnection::~HttpConnection() {
    close();
}

void HttpConnection::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

// Sends the request on the open connection and reads the answer. `nothing_came`: the connection
// ended before any byte of an answer (a kept connection the agent had closed: worth one retry).
Result<HttpAnswer> HttpConnection::exchange(const std::string& request, double deadline, bool& nothing_came) {
    nothing_came = false;
    const std::string where = authority(*url_);
    std::size_t sent = 0;
    while (sent < request.size()) {
        const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_for(fd_, POLLOUT, deadline, cancel_fd_))
                return Error{where + ": no room to send", ErrorCode::timed_out};
        } else {
            nothing_came = true;
            return Error{where + ": the connection closed: " + std::strerror(errno), ErrorCode::unavailable};
        }
    }
    ResponseReader reader;
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
        ResponseReader::State st;
        if (n > 0) {
            st = reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            nothing_came = !reader.started();
            const int err = errno;
            st = reader.finish();
            if (st != ResponseReader::State::complete && n < 0)
                return Error{where + ": " + std::strerror(err), ErrorCode::unavailable};
            if (st != ResponseReader::State::complete && nothing_came)
                return Error{where + ": the connection closed without an answer", ErrorCode::unavailable};
        } else {
            if (!wait_for(fd_, POLLIN, deadline, cancel_fd_)) return Error{"", ErrorCode::timed_out};
            continue;
        }
        if (st == ResponseReader::State::bad) return Error{where + ": " + reader.error(), ErrorCode::failed};
        if (st == ResponseReader::State::complete) {
            if (!reader.keep_alive() || !keep_alive_) close();
            return HttpAnswer{reader.status(), reader.take_body()};
        }
    }
}

Result<HttpAnswer> HttpConnection::get(const std::string& path, const std::string& token, double timeout_seconds) {
    if (!url_.ok()) return url_.error();
    const HttpUrl& u = *url_;
    if (path.empty() || path.front() != '/')
        return Error{"'" + path + "': a path starts with /", ErrorCode::invalid_argument};
    for (char c : path + token)
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
            return Error{"a space or a control character in the path or the token", ErrorCode::invalid_argument};
    const double deadline = monotonic_seconds() + timeout_seconds;
    std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + authority(u) + "\r\nAccept: application/json\r\n";
    if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
    request += keep_alive_ ? "\r\n" : "Connection: close\r\n\r\n";
    for (int attempt = 0;; ++attempt) {
        const bool reused = fd_ >= 0;
        if (!reused) {
            Result<int> fd = connect_to(u, deadline, cancel_fd_);
            if (!fd.ok()) {
                if (fd.error().code == ErrorCode::timed_out)
                    return Error{fd.error().message + " within " + seconds_text(timeout_seconds) + " s",
                                 ErrorCode::timed_out};
                return fd.error();
            }
            fd_ = *fd;
            ++opened_;
        }
        bool nothing_came = false;
        Result<HttpAnswer> a = exchange(request, deadline, nothing_came);
        if (a.ok()) return a;
        close();
        // A kept connection that the agent closed while idle: once more on a new one.
        if (reused && nothing_came && attempt == 0 && monotonic_seconds() < deadline) continue;
        if (a.error().code == ErrorCode::timed_out)
            return Error{
                "http://" + authority(u) + path + ": no full answer within " + seconds_text(timeout_seconds) + " s",
                ErrorCode::timed_out};
        return a.error();
    }
}

Result<HttpAnswer> http_get(const std::string& url, const std::string& token, double timeout_seconds) {
    Result<HttpUrl> u = parse_http_url(url);
    if (!u.ok()) return u.error();
    HttpConnection c(url);
    c.set_keep_alive(false);
    return c.get(u->path, token, timeout_seconds);
}

}  // namespace baton::serve
