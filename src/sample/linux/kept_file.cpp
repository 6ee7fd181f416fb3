#include "sample/linux/kept_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/syscall.h>
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

void ReadBuffer::reserve(std::size_t n) {
    if (n <= capacity_) return;
    auto bigger = std::make_unique<char[]>(n);  // value-initialised once, at growth only
    if (size_) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = n;
}

bool KeptFile::read_all(ReadBuffer& buf) {
    buf.size_ = 0;
    if (fd_ < 0) return false;
    buf.reserve(4096);
    for (;;) {
        // The raw system call: glibc's pread() is a cancellation point, and in a process
        // with threads (the NVML worker) each call pays to enable and disable
        // cancellation. A thousand calls a tick make that measurable.
        auto n = static_cast<ssize_t>(syscall(SYS_pread64, fd_, buf.data_.get() + buf.size_, buf.capacity_ - buf.size_,
                                              static_cast<off_t>(buf.size_)));
        if (n < 0) {
            if (errno == EINTR) continue;
            errno_ = errno;
            buf.size_ = 0;
            return false;
        }
        buf.size_ += static_cast<std::size_t>(n);
        if (n == 0 || buf.size_ < buf.capacity_) break;
        buf.reserve(buf.capacity_ * 2);  // /proc files can be larger than one page (stat on 64+ cores)
    }
    return true;
}

bool read_file(const std::string& path, ReadBuffer& out) {
    KeptFile f(path);
    return f.read_all(out);
}

}  // namespace baton::os
