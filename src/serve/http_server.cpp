#include "serve/http_server.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <string>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

namespace baton::serve {

namespace {

const char* method_name(evhttp_cmd_type c) {
    switch (c) {
        case EVHTTP_REQ_GET:
            return "GET";
        case EVHTTP_REQ_HEAD:
            return "HEAD";
        case EVHTTP_REQ_POST:
            return "POST";
        case EVHTTP_REQ_PUT:
            return "PUT";
        case EVHTTP_REQ_DELETE:
            return "DELETE";
        case EVHTTP_REQ_OPTIONS:
            return "OPTIONS";
        case EVHTTP_REQ_TRACE:
            return "TRACE";
        case EVHTTP_REQ_CONNECT:
            return "CONNECT";
        case EVHTTP_REQ_PATCH:
            return "PATCH";
    }
    return "?";
}

const char* reason_phrase(int status) {
    switch (status) {
        case 200:
            return "OK";
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 404:
            return "Not Found";
        case 403:
            return "Forbidden";
        case 405:
            return "Method Not Allowed";
        case 421:
            return "Misdirected Request";
        case 500:
            return "Internal Server Error";
        case 503:
            return "Service Unavailable";
        default:
            return "Error";
    }
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::listen(const HttpServerOptions& o, HttpHandler handler) {
    std::unique_ptr<HttpServer> s(new HttpServer());
    s->handler_ = std::move(handler);
    s->base_ = event_base_new();
    if (!s->base_) return make_error("cannot start the event loop");
    s->http_ = evhttp_new(s->base_);
    if (!s->http_) return make_error("cannot start the HTTP server");
    evhttp_set_timeout(s->http_, static_cast<int>(o.timeout_seconds));
    evhttp_set_max_headers_size(s->http_, static_cast<ev_ssize_t>(o.max_header_bytes));
    evhttp_set_max_body_size(s->http_, 4096);  // GET and HEAD carry no body; others get 405 anyway
    // Every method reaches the handler, which answers 405 to all but GET and HEAD (libevent's own
    // refusal is a 501 HTML page).
    evhttp_set_allowed_methods(s->http_, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                             EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                             EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    evhttp_set_gencb(s->http_, &HttpServer::on_request, s.get());

    // The socket is made here rather than by evhttp_bind_socket, so that an error keeps its errno.
    const int family = o.address.ipv6 ? AF_INET6 : AF_INET;
    const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error(std::string("cannot make a socket: ") + std::strerror(errno));
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (o.address.ipv6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(static_cast<std::uint16_t>(o.address.port));
        inet_pton(AF_INET6, o.address.host.c_str(), &a->sin6_addr);
        len = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_port = htons(static_cast<std::uint16_t>(o.address.port));
        inet_pton(AF_INET, o.address.host.c_str(), &a->sin_addr);
        len = sizeof *a;
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 1024) != 0) {
        const int e = errno;
        ::close(fd);
        return make_error("cannot listen on " + o.address.text() + ": " + std::strerror(e));
    }
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
        s->port_ = ntohs(o.address.ipv6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    if (!evhttp_accept_socket_with_handle(s->http_, fd)) {
        ::close(fd);
        return make_error("cannot accept connections on " + o.address.text());
    }

    // stop() from another thread writes a byte here; the loop reads it and breaks.
    if (::pipe2(s->wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
        return make_error(std::string("cannot make a pipe: ") + std::strerror(errno));
    s->wake_ = event_new(
        s->base_, s->wake_pipe_[0], EV_READ | EV_PERSIST,
        [](evutil_socket_t pipe_end, short, void* base) {
            char buf[16];
            while (::read(pipe_end, buf, sizeof buf) > 0) {
            }
            event_base_loopbreak(static_cast<event_base*>(base));
        },
        s->base_);
    event_add(s->wake_, nullptr);
    return s;
}

HttpServer::~HttpServer() {
    if (wake_) event_free(wake_);
    if (http_) evhttp_free(http_);  // closes the listening socket and every connection
    if (base_) event_base_free(base_);
    for (int fd : wake_pipe_)
        if (fd >= 0) ::close(fd);
}

void HttpServer::run(const std::vector<int>& signals, const std::function<void(int)>& on_signal) {
    on_signal_ = on_signal;
    std::vector<event*> events;
    for (int sig : signals) {
        event* e = evsignal_new(
            base_, sig, [](evutil_socket_t s, short, void* self) { static_cast<HttpServer*>(self)->on_signal_(s); },
            this);
        event_add(e, nullptr);
        events.push_back(e);
    }
    event_base_dispatch(base_);
    for (event* e : events) event_free(e);
}

void HttpServer::stop() {
    const char byte = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_pipe_[1], &byte, 1);
}

void HttpServer::on_request(evhttp_request* req, void* self_ptr) {
    auto* self = static_cast<HttpServer*>(self_ptr);
    HttpRequest r;
    r.method = method_name(evhttp_request_get_command(req));
    const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
    if (const char* p = uri ? evhttp_uri_get_path(uri) : nullptr) r.path = p;
    if (const char* q = uri ? evhttp_uri_get_query(uri) : nullptr) {
        evkeyvalq params{};
        if (evhttp_parse_query_str(q, &params) != 0) {
            r.query_malformed = true;
        } else {
            for (evkeyval* kv = params.tqh_first; kv; kv = kv->next.tqe_next) r.query[kv->key] = kv->value;
        }
        evhttp_clear_headers(&params);
    }
    evkeyvalq* in = evhttp_request_get_input_headers(req);
    if (const char* a = evhttp_find_header(in, "Authorization")) r.authorization = a;
    if (const char* h = evhttp_find_header(in, "Host")) r.host = h;

    HttpResponse out = self->handler_(r);
    evkeyvalq* headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Content-Type", out.content_type.c_str());
    // Nothing baton serves may be framed or sniffed into another type by a browser.
    evhttp_add_header(headers, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(headers, "X-Frame-Options", "DENY");
    evhttp_add_header(headers, "Cache-Control", "no-store");
    for (const auto& [k, v] : out.headers) evhttp_add_header(headers, k.c_str(), v.c_str());
    evbuffer* body = evbuffer_new();
    // HEAD: the length of the body a GET would get, and no body (evhttp would send it).
    if (r.method == "HEAD")
        evhttp_add_header(headers, "Content-Length", std::to_string(out.body.size()).c_str());
    else
        evbuffer_add(body, out.body.data(), out.body.size());
    evhttp_send_reply(req, out.status, reason_phrase(out.status), body);
    evbuffer_free(body);
}

}  // namespace baton::serve
