#include "queue/queue_socket.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace baton::queue {

namespace {

Result<sockaddr_un> address(const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof a.sun_path)
        return make_error("the socket path " + path + " is longer than the " + std::to_string(sizeof a.sun_path - 1) +
                          " bytes a Unix socket's name may have");
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    return a;
}

// A connected descriptor, or -1 with errno.
int try_connect(const sockaddr_un& a) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
        const int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

}  // namespace

std::vector<SocketPlace> socket_places(const std::map<std::string, std::string>& env, const std::string& run_root) {
    std::vector<SocketPlace> out{{run_root + "/baton/baton.sock", true}};
    auto it = env.find("XDG_RUNTIME_DIR");
    if (it != env.end() && !it->second.empty() && it->second.front() == '/')
        out.push_back({it->second + "/baton/baton.sock", false});
    return out;
}

Result<int> listen_unix(const std::string& path, mode_t mode) {
    Result<sockaddr_un> a = address(path);
    if (!a.ok()) return a.error();
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
        std::filesystem::create_directories(dir, ec);
        if (ec) return make_error("cannot create " + dir.string() + ": " + ec.message());
        ::chmod(dir.c_str(), (mode & 0070) ? 0755 : 0700);
    }
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) return make_error(path + " exists and is not a socket: not replacing it");
        const int fd = try_connect(*a);
        if (fd >= 0) {
            close(fd);
            return make_error("another baton agent answers on " + path);
        }
        ::unlink(path.c_str());  // left by an agent that was killed
    }
    // Bound under a temporary name, given its mode, then renamed into place: the socket never
    // exists at `path` with a wider mode than asked (the process's umask is not touched: other
    // threads create files).
    const std::string temporary = path + ".new-" + std::to_string(getpid());
    Result<sockaddr_un> t = address(temporary);
    if (!t.ok()) return t.error();
    ::unlink(temporary.c_str());
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error(std::string("cannot make a socket: ") + std::strerror(errno));
    if (bind(fd, reinterpret_cast<const sockaddr*>(&*t), sizeof *t) != 0 || ::chmod(temporary.c_str(), mode) != 0 ||
        listen(fd, 128) != 0 || ::rename(temporary.c_str(), path.c_str()) != 0) {
        const int e = errno;
        close(fd);
        ::unlink(temporary.c_str());
        return make_error("cannot listen on " + path + ": " + std::strerror(e));
    }
    return fd;
}

Result<int> connect_unix(const std::string& path) {
    Result<sockaddr_un> a = address(path);
    if (!a.ok()) return a.error();
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) return make_error(ErrorCode::unavailable, "no baton agent at " + path);
    if (!S_ISSOCK(st.st_mode)) return make_error(path + " is not a socket");
    if (st.st_uid != 0 && st.st_uid != geteuid())
        return make_error(ErrorCode::permission_denied, path + " belongs to uid " + std::to_string(st.st_uid) +
                                                            ", not to root or you: not talking to it");
    const int fd = try_connect(*a);
    if (fd < 0) {
        if (errno == ECONNREFUSED || errno == ENOENT)
            return make_error(ErrorCode::unavailable, "no baton agent at " + path);
        return make_error("cannot reach the baton agent at " + path + ": " + std::strerror(errno));
    }
    // The file's owner is not the listener's: the process that answered must be root or us too (a
    // socket swapped between the lstat and the connect, or one another user bound and passed on).
    Result<Peer> peer = peer_of(fd);
    if (!peer.ok() || (peer->uid != 0 && peer->uid != geteuid())) {
        close(fd);
        return make_error(ErrorCode::permission_denied, peer.ok()
                                                            ? path + " is served by uid " + std::to_string(peer->uid) +
                                                                  ", not by root or you: not talking to it"
                                                            : peer.error().message);
    }
    return fd;
}

Result<Peer> peer_of(int fd) {
    ucred c{};
    socklen_t len = sizeof c;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0 || len != sizeof c)
        return make_error(std::string("cannot tell who is connected: ") + std::strerror(errno));
    return Peer{c.uid, c.gid, c.pid};
}

}  // namespace baton::queue
