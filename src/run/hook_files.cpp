#include "run/hook_files.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/units.hpp"

namespace baton::run {

Result<std::string> read_hook_file(const std::string& dir, const std::string& path, std::uint64_t max_bytes,
                                   const std::string& what) {
    const std::string name = path.size() > dir.size() + 1 ? path.substr(dir.size() + 1) : "";
    if (path.compare(0, dir.size() + 1, dir + "/") != 0 || name.empty() || name.find('/') != std::string::npos ||
        name == "." || name == "..")
        return make_error(ErrorCode::permission_denied, what + " outside the run's directory refused: " + path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return make_error("cannot read " + what + " " + path + ": " + std::strerror(errno));
    struct stat st {};
    std::string bytes, error;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        error = what + " " + path + " is not a regular file";
    } else if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
        error = what + " " + path + " is larger than " + format_size(max_bytes);
    } else {
        bytes.resize(static_cast<std::size_t>(st.st_size));
        std::size_t got = 0;
        while (got < bytes.size()) {
            const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        bytes.resize(got);
    }
    ::close(fd);
    if (!error.empty()) return make_error(error);
    return bytes;
}

}  // namespace baton::run
