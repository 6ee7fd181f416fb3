#include "run/events_socket.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/files.hpp"
#include "store/hook_event.hpp"
#include "store/run_owner.hpp"

namespace baton::run {

namespace {

// The directory's name says whose it is: baton-events-PID-STARTTICKS-XXXXXX.
std::string owner_prefix(const store::RunOwner& o) {
    return "baton-events-" + std::to_string(o.pid) + "-" + std::to_string(o.start_ticks.value_or(0)) + "-";
}

}  // namespace

void EventsSocket::remove_stale(const std::string& base) {
    DIR* d = opendir(base.c_str());
    if (!d) return;
    const uid_t me = geteuid();
    while (const dirent* e = readdir(d)) {
        store::RunOwner o;
        unsigned long long pid = 0, start = 0;
        int used = 0;
        if (std::sscanf(e->d_name, "baton-events-%llu-%llu-%n", &pid, &start, &used) != 2 || used == 0) continue;
        o.pid = static_cast<std::int64_t>(std::min<unsigned long long>(pid, 1ull << 40));
        if (start) o.start_ticks = start;
        const std::string dir = base + "/" + e->d_name;
        struct stat st {};
        // Only this user's directories (never follow a link planted there), only of dead owners.
        if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != me || store::owner_alive(o)) continue;
        remove_tree(dir);
    }
    closedir(d);
}

std::string EventsSocket::base_directory() {
    for (const char* var : {"XDG_RUNTIME_DIR", "TMPDIR"})
        if (const char* v = std::getenv(var); v && *v) return v;
    return "/tmp";
}

Result<EventsSocket> EventsSocket::open() {
    const std::string base = base_directory();
    remove_stale(base);
    std::string dir = base + "/" + owner_prefix(store::current_owner()) + "XXXXXX";
    if (!mkdtemp(dir.data())) return make_error("cannot create a directory in " + base + ": " + std::strerror(errno));
    Result<EventsSocket> s = open_at(dir + "/events");
    if (!s.ok()) {
        rmdir(dir.c_str());
        return s.error();
    }
    s->dir_ = dir;
    return s;
}

Result<EventsSocket> EventsSocket::open_at(const std::string& path) {
    EventsSocket s;
    s.path_ = path;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (s.path_.size() >= sizeof addr.sun_path) return make_error("socket path too long: " + s.path_);
    std::memcpy(addr.sun_path, s.path_.c_str(), s.path_.size() + 1);
    s.fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s.fd_ < 0) return make_error(std::string("cannot create the events socket: ") + std::strerror(errno));
    unlink(s.path_.c_str());  // left by an attempt of a killed agent
    if (bind(s.fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const std::string why = "cannot bind " + s.path_ + ": " + std::strerror(errno);
        s.path_.clear();  // not ours to remove
        return make_error(why);
    }
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
    if (!dir_.empty()) remove_tree(dir_);
}

std::vector<std::string> EventsSocket::drain(std::size_t max) {
    std::vector<std::string> out;
    char buf[store::kMaxHookEventBytes + 1];
    while (fd_ >= 0 && out.size() < max) {
        const ssize_t n = recv(fd_, buf, sizeof buf, MSG_TRUNC);
        if (n < 0) break;  // EAGAIN: nothing more for now
        // MSG_TRUNC returns the real length: a longer datagram is kept as a too-long marker.
        out.emplace_back(buf, static_cast<std::size_t>(std::min<ssize_t>(n, sizeof buf)));
    }
    return out;
}

}  // namespace baton::run
