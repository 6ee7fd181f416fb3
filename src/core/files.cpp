#include "core/files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <ftw.h>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "core/printable.hpp"

namespace baton {

Status write_file_atomically(const std::string& path, const std::string& text) {
    const std::size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, std::max<std::size_t>(slash, 1));
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty()) return make_error(ErrorCode::invalid_argument, "cannot write " + path + ": it names a directory");
    std::string tmp = dir + "/." + base.substr(0, 200) + ".XXXXXX";
    const int fd = mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) return os_error("cannot write " + path, errno);
    std::size_t done = 0;
    int err = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            err = n < 0 ? errno : EIO;
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0 && err == 0) err = errno;  // NFS reports a failed write at close
    if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
    if (err != 0) {
        ::unlink(tmp.c_str());
        return os_error("cannot write " + path, err);
    }
    return Ok{};
}

std::optional<std::string> read_small_file(const std::string& path, std::size_t max) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string out;
    char buf[16384];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || out.size() + static_cast<std::size_t>(n) > max) {
            ::close(fd);
            return std::nullopt;
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

std::string file_value(const std::string& path) {
    std::string t = read_small_file(path, 1u << 20).value_or("");
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ' || t.back() == '\t')) t.pop_back();
    return t;
}

namespace {

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
    ::remove(path);  // unlink or rmdir; a failure leaves the entry (and so its parent)
    return 0;
}

}  // namespace

Status make_private_directory(const std::string& dir) {
    if (::mkdir(dir.c_str(), 0700) == 0) return Ok{};
    const int err = errno;
    struct stat st {};
    if (err == EEXIST && ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Ok{};
    return make_error("cannot create " + dir + ": " + std::strerror(err == EEXIST ? ENOTDIR : err));
}

void remove_tree(const std::string& dir) {
    nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

bool write_stdout(const std::string& raw) {
    const std::string text = printable_text(raw);
    std::size_t off = 0;
    while (off < text.size()) {
        const ssize_t n = ::write(STDOUT_FILENO, text.data() + off, text.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        off += static_cast<std::size_t>(n);
    }
    return true;
}

Status write_file(const std::string& path, const std::string& text) {
    if (path == "-") return write_stdout(text) ? Status(Ok{}) : make_error("cannot write to stdout");
    return write_file_atomically(path, text);
}

}  // namespace baton
