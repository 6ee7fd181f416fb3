#include "run/events_socket.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "store/hook_event.hpp"

namespace baton {

Result<EventsSocket> EventsSocket::open() {
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp && *tmp ? tmp : "/tmp";
    std::string dir = base + "/baton-events-XXXXXX";
    if (!mkdtemp(dir.data())) return make_error("cannot create a directory in " + base + ": " + std::strerror(errno));
    EventsSocket s;
    s.dir_ = dir;
    s.path_ = dir + "/events";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (s.path_.size() >= sizeof addr.sun_path) return make_error("socket path too long: " + s.path_);
    std::memcpy(addr.sun_path, s.path_.c_str(), s.path_.size() + 1);
    s.fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s.fd_ < 0) return make_error(std::string("cannot create the events socket: ") + std::strerror(errno));
    if (bind(s.fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
        return make_error("cannot bind " + s.path_ + ": " + std::strerror(errno));
    // Room for a few seconds of steps between two reads (the kernel may cap it lower).
    const int bytes = 4 << 20;
    setsockopt(s.fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    return s;
}

EventsSocket::EventsSocket(EventsSocket&& o) noexcept : fd_(o.fd_), dir_(std::move(o.dir_)), path_(std::move(o.path_)) {
    o.fd_ = -1;
    o.dir_.clear();
    o.path_.clear();
}

EventsSocket::~EventsSocket() {
    if (fd_ >= 0) close(fd_);
    if (!path_.empty()) unlink(path_.c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
}

std::vector<std::string> EventsSocket::drain(std::size_t max) {
    std::vector<std::string> out;
    char buf[kMaxHookEventBytes + 1];
    while (fd_ >= 0 && out.size() < max) {
        const ssize_t n = recv(fd_, buf, sizeof buf, MSG_TRUNC);
        if (n < 0) break;  // EAGAIN: nothing more for now
        // MSG_TRUNC returns the real length: a longer datagram is kept as a too-long marker.
        out.emplace_back(buf, static_cast<std::size_t>(std::min<ssize_t>(n, sizeof buf)));
    }
    return out;
}

}  // namespace baton
