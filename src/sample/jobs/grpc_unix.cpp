#include "sample/jobs/grpc_unix.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/clock.hpp"

namespace baton::jobs {

namespace {

// RFC 9113's frame types and flags, the ones this client meets.
enum FrameType : std::uint8_t {
    kData = 0x0,
    kHeaders = 0x1,
    kRstStream = 0x3,
    kSettings = 0x4,
    kPing = 0x6,
    kGoAway = 0x7,
};
constexpr std::uint8_t kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4, kPadded = 0x8;
constexpr std::uint32_t kStream = 1;
// The largest frame payload a peer may send while we keep the default SETTINGS_MAX_FRAME_SIZE.
constexpr std::size_t kMaxFrame = 16384;

void put32(std::string& out, std::uint32_t v) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void frame(std::string& out, std::uint8_t type, std::uint8_t flags, std::uint32_t stream, std::string_view payload) {
    const auto n = static_cast<std::uint32_t>(payload.size());
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    out.push_back(static_cast<char>((n >> 8) & 0xff));
    out.push_back(static_cast<char>(n & 0xff));
    out.push_back(static_cast<char>(type));
    out.push_back(static_cast<char>(flags));
    put32(out, stream & 0x7fffffffu);
    out.append(payload);
}

// HPACK's integer with an N-bit prefix (RFC 7541 5.1); `first` holds the bits above the prefix.
void hpack_int(std::string& out, std::uint8_t first, int prefix_bits, std::size_t v) {
    const std::size_t max = (1u << prefix_bits) - 1;
    if (v < max) {
        out.push_back(static_cast<char>(first | v));
        return;
    }
    out.push_back(static_cast<char>(first | max));
    v -= max;
    while (v >= 128) {
        out.push_back(static_cast<char>((v % 128) + 128));
        v /= 128;
    }
    out.push_back(static_cast<char>(v));
}

void hpack_string(std::string& out, std::string_view s) {
    hpack_int(out, 0x00, 7, s.size());  // no Huffman coding
    out.append(s);
}

// A literal header field without indexing; `name_index` 0: the name is written too.
void hpack_literal(std::string& out, std::size_t name_index, std::string_view name, std::string_view value) {
    hpack_int(out, 0x00, 4, name_index);
    if (name_index == 0) hpack_string(out, name);
    hpack_string(out, value);
}

std::string request_bytes(std::string_view path, std::string_view message, std::size_t window) {
    std::string out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    // SETTINGS: no server push, a stream window as large as the answer may be.
    std::string settings;
    settings.append({0x00, 0x02});  // SETTINGS_ENABLE_PUSH
    put32(settings, 0);
    settings.append({0x00, 0x04});  // SETTINGS_INITIAL_WINDOW_SIZE
    put32(settings, static_cast<std::uint32_t>(window));
    frame(out, kSettings, 0, 0, settings);
    // The connection's window, from its default 65535 to the same.
    std::string increment;
    put32(increment, static_cast<std::uint32_t>(window - 65535));
    frame(out, 0x8, 0, 0, increment);
    std::string headers;
    headers.push_back(static_cast<char>(0x83));  // :method POST (static table 3)
    headers.push_back(static_cast<char>(0x86));  // :scheme http (6)
    hpack_literal(headers, 4, "", path);         // :path
    hpack_literal(headers, 1, "", "localhost");  // :authority
    hpack_literal(headers, 31, "", "application/grpc");
    hpack_literal(headers, 0, "te", "trailers");
    frame(out, kHeaders, kEndHeaders, kStream, headers);
    std::string data;
    data.push_back(0);  // not compressed
    put32(data, static_cast<std::uint32_t>(message.size()));
    data.append(message);
    frame(out, kData, kEndStream, kStream, data);
    return out;
}

class Connection {
  public:
    explicit Connection(double deadline) : deadline_(deadline) {}
    ~Connection() {
        if (fd_ >= 0) ::close(fd_);
    }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    Status open(const std::string& path) {
        sockaddr_un a{};
        if (path.empty() || path.size() >= sizeof a.sun_path) return make_error("the socket path is too long");
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path, path.data(), path.size());
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd_ < 0) return make_error(std::string("socket: ") + std::strerror(errno));
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
            if (errno != EAGAIN && errno != EINPROGRESS) return make_error(std::strerror(errno));
            if (!wait(POLLOUT)) return make_error("no connection within the deadline");
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err != 0) return make_error(std::strerror(err));
        }
        return Ok{};
    }

    Status write_all(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n > 0) {
                bytes.remove_prefix(static_cast<std::size_t>(n));
            } else if (n < 0 && errno == EINTR) {
            } else if (n < 0 && errno == EAGAIN) {
                if (!wait(POLLOUT)) return make_error("the server does not read (deadline)");
            } else {
                return make_error(std::string("write: ") + std::strerror(errno));
            }
        }
        return Ok{};
    }

    // Appends what arrives to `buf`; false at the deadline, on EOF or on an error (`why` says).
    bool read_some(std::string& buf, std::string& why) {
        char chunk[16384];
        while (true) {
            const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
            if (n > 0) {
                buf.append(chunk, static_cast<std::size_t>(n));
                return true;
            }
            if (n == 0) {
                why = "the server closed the connection before its answer ended";
                return false;
            }
            if (errno == EINTR) continue;
            if (errno != EAGAIN) {
                why = std::string("read: ") + std::strerror(errno);
                return false;
            }
            if (!wait(POLLIN)) {
                why = "no answer within the deadline";
                return false;
            }
        }
    }

  private:
    bool wait(short events) {
        while (true) {
            const double left = deadline_ - monotonic_seconds();
            if (left <= 0) return false;
            pollfd p{fd_, events, 0};
            const int r = ::poll(&p, 1, static_cast<int>(std::min(left * 1000.0, 60000.0)) + 1);
            if (r > 0) return true;
            if (r < 0 && errno != EINTR) return false;
        }
    }

    int fd_ = -1;
    double deadline_;
};

std::uint32_t get24(std::string_view b) {
    return (static_cast<std::uint32_t>(static_cast<unsigned char>(b[0])) << 16) |
           (static_cast<std::uint32_t>(static_cast<unsigned char>(b[1])) << 8) |
           static_cast<std::uint32_t>(static_cast<unsigned char>(b[2]));
}

std::uint32_t get32(std::string_view b) {
    return (static_cast<std::uint32_t>(static_cast<unsigned char>(b[0])) << 24) | get24(b.substr(1));
}

}  // namespace

Result<std::string> grpc_unary_call(const std::string& socket_path, std::string_view path, std::string_view request,
                                    double timeout_seconds, std::size_t max_bytes) {
    const std::size_t window = std::clamp<std::size_t>(max_bytes + 1024, 65535, 0x7fffffffu);
    Connection c(monotonic_seconds() + timeout_seconds);
    if (Status s = c.open(socket_path); !s.ok()) return s.error();
    if (Status s = c.write_all(request_bytes(path, request, window)); !s.ok()) return s.error();
    std::string in, body, why;
    std::size_t at = 0;
    bool ended = false;
    while (!ended) {
        // Whole frames in `in` from `at`.
        while (!ended && in.size() - at >= 9) {
            const std::string_view head(in.data() + at, 9);
            const std::size_t len = get24(head);
            const auto type = static_cast<std::uint8_t>(head[3]);
            const auto flags = static_cast<std::uint8_t>(head[4]);
            const std::uint32_t stream = get32(head.substr(5)) & 0x7fffffffu;
            if (len > kMaxFrame) return make_error("a frame larger than allowed (" + std::to_string(len) + " bytes)");
            if (in.size() - at - 9 < len) break;
            std::string_view payload(in.data() + at + 9, len);
            at += 9 + len;
            if (type == kSettings && !(flags & kAck)) {
                if (len % 6 != 0 || stream != 0) return make_error("a malformed SETTINGS frame");
                std::string ack;
                frame(ack, kSettings, kAck, 0, "");
                if (Status s = c.write_all(ack); !s.ok()) return s.error();
            } else if (type == kPing && !(flags & kAck)) {
                if (len != 8) return make_error("a malformed PING frame");
                std::string pong;
                frame(pong, kPing, kAck, 0, payload);
                if (Status s = c.write_all(pong); !s.ok()) return s.error();
            } else if (type == kGoAway) {
                return make_error("the server refused the call (GOAWAY)");
            } else if (type == kRstStream && stream == kStream) {
                return make_error("the server reset the call (RST_STREAM)");
            } else if (type == kData && stream == kStream) {
                if (flags & kPadded) {
                    if (payload.empty() || static_cast<unsigned char>(payload[0]) >= payload.size())
                        return make_error("a malformed padded DATA frame");
                    const std::size_t pad = static_cast<unsigned char>(payload[0]);
                    payload = payload.substr(1, payload.size() - 1 - pad);
                }
                if (body.size() + payload.size() > max_bytes + 5)
                    return make_error("an answer larger than " + std::to_string(max_bytes) + " bytes");
                body.append(payload);
                ended = flags & kEndStream;
            } else if (type == kHeaders && stream == kStream) {
                ended = flags & kEndStream;  // the trailers (or a trailers-only error)
            }
        }
        if (at > 65536) {
            in.erase(0, at);
            at = 0;
        }
        if (!ended && !c.read_some(in, why)) return make_error(why);
    }
    // One length-prefixed message: flag 0 (not compressed), its length, its bytes.
    if (body.empty()) return make_error("the server answered without a message (an error status)");
    if (body.size() < 5) return make_error("a truncated message");
    if (body[0] != 0) return make_error("a compressed message (none was asked for)");
    if (get32(std::string_view(body).substr(1)) != body.size() - 5)
        return make_error("the message's length does not match its bytes");
    return body.substr(5);
}

}  // namespace baton::jobs
