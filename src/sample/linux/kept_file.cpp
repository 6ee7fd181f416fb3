#include "sample/linux/kept_file.hpp"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace baton::os {

KeptFile::~KeptFile() {
    close();
}

KeptFile& KeptFile::operator=(KeptFile&& other) noexcept {
    if (this != &other) {
        close();
        fd_ = other.fd_;
        errno_ = other.errno_;
        other.fd_ = -1;
    }
    return *this;
}

bool KeptFile::open(const std::string& path) {
    close();
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
        errno_ = errno;
        return false;
    }
    return true;
}

void KeptFile::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

bool KeptFile::read_all(std::string& buf) {
    if (fd_ < 0) return false;
    if (buf.capacity() < 4096) buf.reserve(4096);
    buf.resize(buf.capacity());
    std::size_t len = 0;
    for (;;) {
        ssize_t n = ::pread(fd_, buf.data() + len, buf.size() - len, static_cast<off_t>(len));
        if (n < 0) {
            if (errno == EINTR) continue;
            errno_ = errno;
            buf.clear();
            return false;
        }
        len += static_cast<std::size_t>(n);
        if (n == 0 || len < buf.size()) break;
        buf.resize(buf.size() * 2);  // /proc files can be larger than one page (stat on 64+ cores)
    }
    buf.resize(len);
    return true;
}

bool read_file(const std::string& path, std::string& out) {
    KeptFile f(path);
    return f.read_all(out);
}

}  // namespace baton::os
