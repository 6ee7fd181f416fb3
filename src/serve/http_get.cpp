#include "serve/http_get.hpp"

#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/text_parse.hpp"

namespace baton::serve {

namespace {

constexpr std::size_t kMaxAnswer = 64u << 20;

struct Url {
    std::string host, port, path;
};

Result<Url> parse_url(const std::string& url) {
    const std::string scheme = "http://";
    if (url.rfind(scheme, 0) != 0)
        return Error{"'" + url + "': expected http://HOST:PORT/...", ErrorCode::invalid_argument};
    std::string rest = url.substr(scheme.size());
    const std::size_t slash = rest.find('/');
    Url u;
    u.path = slash == std::string::npos ? "/" : rest.substr(slash);
    std::string authority = rest.substr(0, slash);
    std::size_t colon;
    if (!authority.empty() && authority.front() == '[') {
        const std::size_t close = authority.find(']');
        if (close == std::string::npos) return Error{"'" + url + "': unclosed [", ErrorCode::invalid_argument};
        u.host = authority.substr(1, close - 1);
        colon = authority.find(':', close);
    } else {
        colon = authority.rfind(':');
        u.host = authority.substr(0, colon);
    }
    u.port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
    const std::optional<unsigned> port = text::parse_digits<unsigned>(u.port);
    if (u.host.empty() || !port || *port == 0 || *port > 65535)
        return Error{"'" + url + "': expected http://HOST:PORT/...", ErrorCode::invalid_argument};
    for (char c : u.path)
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
            return Error{"'" + url + "': the path holds a space or a control character", ErrorCode::invalid_argument};
    return u;
}

// Waits for `events` on fd until the deadline; false when it passed (or poll failed).
bool wait_for(int fd, short events, double deadline) {
    for (;;) {
        const double left = deadline - monotonic_seconds();
        if (left <= 0) return false;
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
}

}  // namespace

Result<HttpAnswer> http_get(const std::string& url, const std::string& token, double timeout_seconds) {
    Result<Url> parsed = parse_url(url);
    if (!parsed.ok()) return parsed.error();
    const Url& u = parsed.value();
    const double deadline = monotonic_seconds() + timeout_seconds;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = ::getaddrinfo(u.host.c_str(), u.port.c_str(), &hints, &found); rc != 0)
        return Error{u.host + ": " + ::gai_strerror(rc), ErrorCode::unavailable};
    int fd = -1;
    std::string why = "no address";
    for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        int err = errno;
        if (err == EINPROGRESS && wait_for(fd, POLLOUT, deadline)) {
            socklen_t len = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err == 0) break;
        }
        why = err == EINPROGRESS ? "no answer in time" : std::strerror(err);
        ::close(fd);
        fd = -1;
    }
    ::freeaddrinfo(found);
    if (fd < 0) return Error{"cannot connect to " + u.host + ":" + u.port + ": " + why, ErrorCode::unavailable};

    std::string request = "GET " + u.path + " HTTP/1.0\r\nHost: " +
                          (u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host) + ":" + u.port +
                          "\r\nAccept: application/json\r\n";
    if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
    request += "Connection: close\r\n\r\n";
    std::size_t sent = 0;
    while (sent < request.size()) {
        const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_for(fd, POLLOUT, deadline)) break;
        } else {
            break;
        }
    }
    std::string answer;
    bool complete = false;
    if (sent == request.size()) {
        char buffer[65536];
        while (answer.size() <= kMaxAnswer) {
            const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
            if (n > 0) {
                answer.append(buffer, static_cast<std::size_t>(n));
            } else if (n == 0) {
                complete = true;
                break;
            } else if (errno == EAGAIN || errno == EINTR) {
                if (!wait_for(fd, POLLIN, deadline)) break;
            } else {
                break;
            }
        }
    }
    ::close(fd);
    if (sent != request.size() || (!complete && answer.size() <= kMaxAnswer))
        return Error{url + ": no full answer within " + std::to_string(static_cast<int>(timeout_seconds)) + " s",
                     ErrorCode::timed_out};
    if (answer.size() > kMaxAnswer) return Error{url + ": the answer is over 64 MiB", ErrorCode::failed};
    // "HTTP/1.x NNN reason\r\n" headers "\r\n\r\n" body.
    const std::size_t end = answer.find("\r\n\r\n");
    if (answer.rfind("HTTP/1.", 0) != 0 || answer.size() < 12 || end == std::string::npos)
        return Error{url + ": not an HTTP answer", ErrorCode::failed};
    const std::optional<int> status = text::parse_digits<int>(std::string_view(answer).substr(9, 3));
    if (!status) return Error{url + ": not an HTTP answer", ErrorCode::failed};
    return HttpAnswer{*status, answer.substr(end + 4)};
}

}  // namespace baton::serve
