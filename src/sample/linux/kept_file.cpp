#include "sample/linux/kept_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
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
    // O_NONBLOCK: a FIFO planted where a /proc file should be must not block the open. Only
    // regular files are read (every /proc and /sys file is one): not a FIFO, not /dev/zero.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) {
        errno_ = errno;
        return false;
    }
    struct stat st {};
    if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        close();
        errno = errno_ = EINVAL;
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
        // /proc files can be larger than one page (stat on 64+ cores, a long command line); a
        // file larger than any real one is cut, never read without end.
        if (buf.capacity_ >= kMaxFileBytes) break;
        buf.reserve(std::min(buf.capacity_ * 2, kMaxFileBytes));
    }
    return true;
}

bool read_file(const std::string& path, ReadBuffer& out) {
    KeptFile f(path);
    return f.read_all(out);
}

}  // namespace baton::os
