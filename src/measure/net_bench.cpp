#include "measure/net_bench.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "measure/bench_math.hpp"
#include "measure/contention.hpp"
#include "measure/file_text.hpp"
#include "core/clock.hpp"
#include "core/text_parse.hpp"
#include "core/units.hpp"

namespace baton::measure {

namespace {

constexpr std::size_t kWrite = 128 << 10;  // each send, as iperf3's default for TCP
constexpr std::size_t kMaxLine = 256;      // a header or control line longer than this is refused
constexpr unsigned kMaxStreams = 128;
constexpr double kMaxSeconds = 3600;
constexpr double kHeaderSeconds = 10;  // a connection that says nothing for this long is dropped
constexpr double kGraceSeconds = 30;   // past a test's length before the server gives up on it

struct Socket {
    int fd = -1;
    Socket() = default;
    explicit Socket(int f) : fd(f) {}
    Socket(Socket&& o) noexcept : fd(o.fd) { o.fd = -1; }
    Socket& operator=(Socket&& o) noexcept {
        std::swap(fd, o.fd);
        return *this;
    }
    ~Socket() {
        if (fd >= 0) ::close(fd);
    }
};

bool send_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

bool send_line(int fd, const std::string& line) {
    const std::string l = line + "\n";
    return send_all(fd, l.data(), l.size());
}

// Reads one line (without '\n') within `seconds`; none on timeout, EOF, error or an overlong line.
std::optional<std::string> read_line(int fd, double seconds) {
    std::string line;
    const double deadline = monotonic_seconds() + seconds;
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        const double left = deadline - monotonic_seconds();
        if (left <= 0 || ::poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) return std::nullopt;
        char c = 0;
        const ssize_t n = ::recv(fd, &c, 1, 0);
        if (n <= 0) return std::nullopt;
        if (c == '\n') return line;
        if (line.size() >= kMaxLine) return std::nullopt;
        line.push_back(c);
    }
}

std::vector<std::string_view> words(std::string_view s) {
    std::vector<std::string_view> out;
    for (std::string_view w = text::take_word(s); !w.empty(); w = text::take_word(s)) out.push_back(w);
    return out;
}

// One connection the server holds: its header being read, then a control stream (a data stream
// goes to a StreamReader of its own).
struct Conn {
    Socket sock;
    enum class Kind { header, control } kind = Kind::header;
    std::string header;
    double since = 0;
    std::string peer;
};

// One data stream of a test, read on a thread of its own, as the sender writes each stream from a
// thread of its own: one receiving thread for every stream would cap the figure at what one core can
// copy (about 3 GB/s here on loopback, below a 100 Gb/s NIC), not what the link carries.
class StreamReader {
  public:
    StreamReader(Socket s, int wake_fd) : sock_(std::move(s)), thread_([this, wake_fd] { run(wake_fd); }) {}
    StreamReader(const StreamReader&) = delete;
    StreamReader& operator=(const StreamReader&) = delete;
    ~StreamReader() { stop(); }
    // Ends the read (the sender may still be sending) and waits for the thread.
    void stop() {
        if (!thread_.joinable()) return;
        ::shutdown(sock_.fd, SHUT_RDWR);
        thread_.join();
    }
    // The stream ended (the sender closed it, or it failed); then the figures below hold.
    bool done() const { return done_.load(); }
    std::uint64_t bytes() const { return bytes_; }
    double first_byte() const { return first_; }  // monotonic seconds; -1 when nothing came
    double last_byte() const { return last_; }

  private:
    void run(int wake_fd) {
        std::vector<char> buf(kWrite);  // reads as large as the writes, as iperf3 reads (128 streams: 16 MiB)
        for (;;) {
            const ssize_t n = ::recv(sock_.fd, buf.data(), buf.size(), 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            const double now = monotonic_seconds();
            if (first_ < 0) first_ = now;
            last_ = now;
            bytes_ += static_cast<std::uint64_t>(n);
        }
        done_.store(true);
        const char one = 1;
        (void)!::write(wake_fd, &one, 1);  // the server's loop counts the ended streams
    }

    Socket sock_;
    std::uint64_t bytes_ = 0;
    double first_ = -1, last_ = -1;
    std::atomic<bool> done_{false};
    std::thread thread_;  // last: it starts once the fields above exist
};

// The numeric address of a socket's far end (getpeername) or near end (getsockname); "" when unknown.
std::string socket_address(int fd, bool peer) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if ((peer ? ::getpeername : ::getsockname)(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
    char host[INET6_ADDRSTRLEN] = "";
    if (a.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&a)->sin_addr, host, sizeof host);
    else if (a.ss_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr, host, sizeof host);
    return host;
}

}  // namespace

Status run_net_server(const NetServerOptions& o) {
    const int family = o.listen.ipv6 ? AF_INET6 : AF_INET;
    Socket listener(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (listener.fd < 0) return make_error(fmt::format("cannot open a socket: {}", std::strerror(errno)));
    const int one = 1;
    ::setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage addr{};
    socklen_t addr_len = 0;
    if (o.listen.ipv6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(static_cast<std::uint16_t>(o.listen.port));
        ::inet_pton(AF_INET6, o.listen.host.c_str(), &a->sin6_addr);
        addr_len = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&addr);
        a->sin_family = AF_INET;
        a->sin_port = htons(static_cast<std::uint16_t>(o.listen.port));
        ::inet_pton(AF_INET, o.listen.host.c_str(), &a->sin_addr);
        addr_len = sizeof *a;
    }
    if (::bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0 || ::listen(listener.fd, 64) != 0)
        return make_error(fmt::format("cannot listen on {}: {}", o.listen.text(), std::strerror(errno)));
    ListenAddress bound = o.listen;
    if (::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) == 0)
        bound.port = ntohs(o.listen.ipv6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (o.say)
        o.say(fmt::format("listening on {} (baton bench net --connect HOST:{} from the other machine)", bound.text(),
                          bound.port));

    std::vector<std::unique_ptr<Conn>> conns;
    // The test in progress: its token, streams, length, control connection and counts.
    struct Test {
        std::string token;
        unsigned streams = 0, joined = 0;
        double seconds = 0, started = 0;
        Conn* control = nullptr;
        std::string peer;
        std::vector<std::unique_ptr<StreamReader>> readers;
    };
    std::optional<Test> test;
    // The readers' threads say a stream ended through this pipe.
    int wake[2] = {-1, -1};
    if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0)
        return make_error(fmt::format("cannot make a pipe: {}", std::strerror(errno)));
    const Socket wake_read(wake[0]), wake_write(wake[1]);
    std::vector<char> buf(kMaxLine);
    auto end_test = [&]() {
        if (test)
            for (auto& r : test->readers) r->stop();
        for (auto& c : conns)
            if (c->kind != Conn::Kind::header) c->sock = Socket();
        test.reset();
    };
    // Every stream has joined and ended: the figure goes to the client.
    auto finish_if_all_ended = [&]() -> bool {
        if (!test || test->joined < test->streams ||
            !std::all_of(test->readers.begin(), test->readers.end(), [](const auto& r) { return r->done(); }))
            return false;
        std::uint64_t bytes = 0;
        double first = -1, last = -1;
        for (const auto& r : test->readers) {
            bytes += r->bytes();
            if (r->first_byte() >= 0 && (first < 0 || r->first_byte() < first)) first = r->first_byte();
            last = std::max(last, r->last_byte());
        }
        const double secs = std::max(last - first, 1e-6);
        send_line(test->control->sock.fd, fmt::format("RESULT {} {:.6f}", bytes, secs));
        if (o.say)
            o.say(fmt::format("test from {}: {} streams, {} in {:.1f} s, {}", test->peer, test->streams,
                              format_size(bytes), secs, format_rate(static_cast<double>(bytes) / secs)));
        end_test();
        return true;
    };
    for (;;) {
        if (o.stop && o.stop->load()) {
            end_test();
            return Ok{};
        }
        std::vector<pollfd> fds{{listener.fd, POLLIN, 0}, {wake_read.fd, POLLIN, 0}};
        for (auto& c : conns) fds.push_back({c->sock.fd, POLLIN, 0});
        if (::poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR)
            return make_error(fmt::format("poll: {}", std::strerror(errno)));
        const double now = monotonic_seconds();
        if (fds[1].revents & POLLIN) {
            char drain[64];
            while (::read(wake_read.fd, drain, sizeof drain) > 0) {
            }
            if (finish_if_all_ended() && o.once) return Ok{};
        }
        if (fds[0].revents & POLLIN) {
            const int fd = ::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd >= 0) {
                auto c = std::make_unique<Conn>();
                c->sock = Socket(fd);
                c->since = now;
                c->peer = socket_address(fd, true);
                if (conns.size() < 2 * kMaxStreams) conns.push_back(std::move(c));  // else closed at once
            }
        }
        for (std::size_t i = 2; i < fds.size(); ++i) {
            Conn& c = *conns[i - 2];
            if (c.sock.fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t n = ::recv(c.sock.fd, buf.data(), 1, 0);
            if (c.kind == Conn::Kind::header) {
                if (n <= 0) {
                    c.sock = Socket();
                    continue;
                }
                if (buf[0] != '\n') {
                    c.header.push_back(buf[0]);
                    if (c.header.size() > kMaxLine) c.sock = Socket();
                    continue;
                }
                const NetRequest req = parse_net_request(c.header);
                if (req.kind == NetRequest::Kind::test && test) {
                    send_line(c.sock.fd, "ERR busy: another test is running");
                    c.sock = Socket();
                } else if (req.kind == NetRequest::Kind::test) {
                    test.emplace();
                    test->token = req.token;
                    test->streams = req.streams;
                    test->seconds = req.seconds;
                    test->started = now;
                    test->control = &c;
                    test->peer = c.peer;
                    c.kind = Conn::Kind::control;
                    send_line(c.sock.fd, "OK");
                } else if (req.kind == NetRequest::Kind::data && test && req.token == test->token &&
                           test->joined < test->streams) {
                    ++test->joined;
                    test->readers.push_back(std::make_unique<StreamReader>(std::move(c.sock), wake_write.fd));
                } else {
                    send_line(c.sock.fd, "ERR bad request");
                    c.sock = Socket();
                }
                continue;
            }
            // The control connection: the client went away (or sent what it must not).
            if (test) {
                if (o.say) o.say(fmt::format("test from {} abandoned by the client", test->peer));
                end_test();
            }
        }
        // Drop what is closed, headers that never came, and a test that overran.
        if (test && now - test->started > test->seconds + kGraceSeconds) {
            if (o.say) o.say(fmt::format("test from {} did not end in time; dropped", test->peer));
            end_test();
        }
        for (auto& c : conns)
            if (c->kind == Conn::Kind::header && now - c->since > kHeaderSeconds) c->sock = Socket();
        std::erase_if(conns, [](const std::unique_ptr<Conn>& c) { return c->sock.fd < 0; });
    }
}

NetRequest parse_net_request(std::string_view line) {
    NetRequest r;
    const std::vector<std::string_view> w = words(line);
    if (w.size() == 5 && w[0] == "BATON-NET" && w[1] == "1") {
        const std::optional<std::uint64_t> streams = text::parse_u64(w[3]);
        std::string_view sw = w[4];
        const std::optional<double> seconds = text::take_double(sw);
        if (!streams || *streams < 1 || *streams > kMaxStreams || !seconds || !sw.empty() ||
            !(*seconds > 0 && *seconds <= kMaxSeconds) || w[2].size() > 64)  // NaN fails too
            return r;
        r.kind = NetRequest::Kind::test;
        r.token = std::string(w[2]);
        r.streams = static_cast<unsigned>(*streams);
        r.seconds = *seconds;
    } else if (w.size() == 2 && w[0] == "DATA" && w[1].size() <= 64) {
        r.kind = NetRequest::Kind::data;
        r.token = std::string(w[1]);
    }
    return r;
}

Result<std::pair<std::string, int>> parse_host_port(const std::string& text) {
    std::string host = text;
    int port = kNetDefaultPort;
    std::string port_text;
    if (!host.empty() && host.front() == '[') {
        const std::size_t close = host.find(']');
        if (close == std::string::npos) return make_error("--connect " + text + ": no closing ]");
        if (close + 1 < host.size()) {
            if (host[close + 1] != ':') return make_error("--connect " + text + ": expected [ADDRESS]:PORT");
            port_text = host.substr(close + 2);
        }
        host = host.substr(1, close - 1);
    } else if (std::count(host.begin(), host.end(), ':') == 1) {
        port_text = host.substr(host.find(':') + 1);
        host = host.substr(0, host.find(':'));
    }
    if (!port_text.empty() || (!text.empty() && text.back() == ':')) {
        const std::optional<std::uint64_t> p = text::parse_u64(port_text);
        if (!p || *p == 0 || *p > 65535) return make_error("--connect " + text + ": the port must be 1 to 65535");
        port = static_cast<int>(*p);
    }
    if (host.empty()) return make_error("--connect " + text + ": no host");
    return std::pair{host, port};
}

std::string interface_with_address(const std::string& address) {
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return "";
    std::string found;
    for (ifaddrs* i = list; i && found.empty(); i = i->ifa_next) {
        if (!i->ifa_addr) continue;
        char host[INET6_ADDRSTRLEN] = "";
        if (i->ifa_addr->sa_family == AF_INET)
            ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, host, sizeof host);
        else if (i->ifa_addr->sa_family == AF_INET6)
            ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, host, sizeof host);
        if (address == host) found = i->ifa_name;
    }
    ::freeifaddrs(list);
    return found;
}

namespace {

// Connects to host:port within 5 s.
Result<Socket> connect_to(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
        return make_error(fmt::format("cannot resolve {}: {}", host, ::gai_strerror(rc)));
    std::string last = "no address";
    for (addrinfo* a = res; a; a = a->ai_next) {
        Socket s(::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        if (s.fd < 0) continue;
        int rc = ::connect(s.fd, a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            pollfd p{s.fd, POLLOUT, 0};
            int err = ETIMEDOUT;
            socklen_t len = sizeof err;
            if (::poll(&p, 1, 5000) == 1) ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
            rc = err == 0 ? 0 : -1;
            errno = err;
        }
        if (rc == 0) {
            ::fcntl(s.fd, F_SETFL, ::fcntl(s.fd, F_GETFL) & ~O_NONBLOCK);
            ::freeaddrinfo(res);
            return s;
        }
        last = std::strerror(errno);
    }
    ::freeaddrinfo(res);
    return make_error(
        fmt::format("cannot connect to {}:{}: {} (is baton bench net --listen running there?)", host, port, last));
}

}  // namespace

Result<BenchReport> run_net_client(const NetClientOptions& o) {
    if (o.streams < 1 || o.streams > kMaxStreams) return make_error("--streams must be 1 to 128");
    if (!(o.seconds > 0) || o.seconds > kMaxSeconds) return make_error("--seconds must be above 0 and at most 3600");
    Result<Socket> control = connect_to(o.host, o.port);
    if (!control.ok()) return control.error();
    std::mt19937_64 rng(std::random_device{}());
    const std::string token = fmt::format("{:016x}", rng());
    if (!send_line(control->fd, fmt::format("BATON-NET 1 {} {} {}", token, o.streams, o.seconds)))
        return make_error(fmt::format("{}:{} closed the connection", o.host, o.port));
    const std::optional<std::string> answer = read_line(control->fd, 5);
    if (!answer)
        return make_error(fmt::format("{}:{} did not answer as baton bench net --listen does", o.host, o.port));
    if (*answer != "OK")
        return make_error(fmt::format("{}:{} refused the test: {}", o.host, o.port,
                                      answer->rfind("ERR ", 0) == 0 ? answer->substr(4) : *answer));
    const std::string local = socket_address(control->fd, false);
    const std::string interface = interface_with_address(local);

    ContentionWatch watch(o.sampler);
    watch.start();
    std::vector<std::uint64_t> sent(o.streams, 0);
    std::vector<std::string> errors(o.streams);
    std::vector<std::thread> threads;
    const double start = monotonic_seconds();
    for (unsigned s = 0; s < o.streams; ++s)
        threads.emplace_back([&, s] {
            Result<Socket> data = connect_to(o.host, o.port);
            if (!data.ok()) {
                errors[s] = data.error().message;
                return;
            }
            if (!send_line(data->fd, "DATA " + token)) {
                errors[s] = "the server closed a data stream";
                return;
            }
            std::vector<char> block(kWrite, 'b');
            while (monotonic_seconds() - start < o.seconds) {
                if (!send_all(data->fd, block.data(), block.size())) {
                    errors[s] = "the server closed a data stream early";
                    return;
                }
                sent[s] += block.size();
            }
            ::shutdown(data->fd, SHUT_WR);
            char c;
            while (::recv(data->fd, &c, 1, 0) > 0) {
            }  // until the server has read it all and closed
        });
    for (std::thread& t : threads) t.join();
    for (const std::string& e : errors)
        if (!e.empty()) return make_error(e);
    const std::optional<std::string> result = read_line(control->fd, kGraceSeconds);
    const Snapshot& after = watch.finish();
    if (!result) return make_error(fmt::format("{}:{} sent no result", o.host, o.port));
    const std::vector<std::string_view> w = words(*result);
    std::string_view secs_text = w.size() == 3 ? w[2] : std::string_view();
    const std::optional<std::uint64_t> bytes = w.size() == 3 ? text::parse_u64(w[1]) : std::nullopt;
    const std::optional<double> secs = text::take_double(secs_text);
    if (w.size() != 3 || w[0] != "RESULT" || !bytes || !secs || !(*secs > 0 && *secs < 1e9))
        return make_error(fmt::format("{}:{} sent a result baton cannot read: {}", o.host, o.port, *result));

    BenchReport r;
    r.bench = "net";
    const double rate = static_cast<double>(*bytes) / *secs;
    r.notes.push_back(fmt::format("to {}:{} from {} ({}), {} streams of 128 KiB writes for {} s", o.host, o.port, local,
                                  interface.empty() ? "interface unknown" : interface, o.streams, o.seconds));
    Table t;
    t.title = "TCP streams (sent, as the sender counted)";
    t.keys = {"stream", "bytes", "bytes_per_second"};
    t.headers = {"stream", "sent", "MB/s"};
    const double elapsed = std::max(o.seconds, 1e-6);
    for (unsigned s = 0; s < o.streams; ++s)
        t.rows.push_back({number_cell(s, std::to_string(s)),
                          number_cell(static_cast<double>(sent[s]), format_size(sent[s])),
                          number_cell(static_cast<double>(sent[s]) / elapsed,
                                      fmt::format("{:.0f}", static_cast<double>(sent[s]) / elapsed / 1e6))});
    t.rows.push_back({text_cell("received"), number_cell(static_cast<double>(*bytes), format_size(*bytes)),
                      number_cell(rate, fmt::format("{:.0f}", rate / 1e6))});
    r.tables.push_back(std::move(t));

    LinkResult l;
    l.link = fmt::format("net {}:{}", o.host, o.port);
    l.measured = rate;
    l.ok_share = o.ok_share;
    if (!interface.empty()) {
        l.peak = net_speed_bytes_per_second(file_text(o.sys_root + "/class/net/" + interface + "/speed"));
        l.peak_source = l.peak ? fmt::format("{} link speed (/sys/class/net/{}/speed)", interface, interface)
                               : fmt::format("{} reports no link speed (loopback or virtual)", interface);
    } else {
        l.peak_source = "the local interface is unknown";
    }
    const std::string contention = interface.empty() ? "" : net_contention(after, interface, rate);
    l.verdict = link_verdict(l.share(), o.ok_share, contention);
    if (l.verdict == "saturated") l.detail = contention;
    r.links.push_back(std::move(l));
    return r;
}

}  // namespace baton::measure
