#include "launch/rank_output.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "run/nccl_errors.hpp"

namespace baton::launch {

namespace {

constexpr std::size_t kMaxLine = 4096;      // a longer console line goes out in pieces
constexpr std::size_t kMaxTailLine = 1000;  // a kept line is clipped

void write_all(int fd, std::string_view s) {
    while (!s.empty()) {
        const ssize_t n = write(fd, s.data(), s.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the console is gone: the log still has everything
        s.remove_prefix(static_cast<std::size_t>(n));
    }
}

}  // namespace

Status make_directories(const std::string& path, mode_t mode, std::optional<gid_t> group) {
    std::string sofar;
    std::size_t i = 0;
    while (i <= path.size()) {
        const std::size_t slash = path.find('/', i);
        const std::size_t end = slash == std::string::npos ? path.size() : slash;
        sofar = path.substr(0, end);
        if (!sofar.empty()) {
            if (mkdir(sofar.c_str(), mode) == 0) {
                // Exactly `mode`, whatever the umask took away, and the group asked for.
                if ((group && chown(sofar.c_str(), static_cast<uid_t>(-1), *group) != 0) ||
                    chmod(sofar.c_str(), mode) != 0)
                    return make_error("cannot set the owner or mode of " + sofar + ": " + std::strerror(errno));
            } else if (errno != EEXIST) {
                return make_error("cannot create " + sofar + ": " + std::strerror(errno));
            }
        }
        if (slash == std::string::npos) break;
        i = slash + 1;
    }
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return make_error(path + " is not a directory");
    return Ok{};
}

RankStream::RankStream(int rank, int console_fd, bool prefix, std::string log_path, std::size_t keep_lines)
    : rank_(rank), console_fd_(console_fd), prefix_(prefix), log_path_(std::move(log_path)), keep_lines_(keep_lines) {}

RankStream::RankStream(RankStream&& o) noexcept
    : rank_(o.rank_),
      console_fd_(o.console_fd_),
      prefix_(o.prefix_),
      log_path_(std::move(o.log_path_)),
      keep_lines_(o.keep_lines_),
      log_fd_(o.log_fd_),
      partial_(std::move(o.partial_)),
      partial_since_(o.partial_since_),
      mid_line_(o.mid_line_),
      tail_partial_(std::move(o.tail_partial_)),
      tail_(std::move(o.tail_)),
      first_nccl_error_(std::move(o.first_nccl_error_)),
      bytes_(o.bytes_) {
    o.log_fd_ = -1;
}

RankStream::~RankStream() {
    if (log_fd_ >= 0) close(log_fd_);
}

Status RankStream::open(std::optional<gid_t> group) {
    const mode_t dir_mode = group ? 0750 : 0700, file_mode = group ? 0640 : 0600;
    const std::size_t slash = log_path_.rfind('/');
    if (slash != std::string::npos && slash > 0) {
        const Status s = make_directories(log_path_.substr(0, slash), dir_mode, group);
        if (!s.ok()) return s;
    }
    log_fd_ = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, file_mode);
    if (log_fd_ < 0)
        return make_error("cannot write " + log_path_ + ": " +
                          (errno == ELOOP ? std::string("it is a symbolic link") : std::strerror(errno)));
    // A file that was there keeps its old mode through O_TRUNC: set it, and the group.
    if ((group && fchown(log_fd_, static_cast<uid_t>(-1), *group) != 0) || fchmod(log_fd_, file_mode) != 0) {
        const std::string why = std::strerror(errno);
        close(log_fd_);
        log_fd_ = -1;
        return make_error("cannot set the owner or mode of " + log_path_ + ": " + why);
    }
    return Ok{};
}

void RankStream::to_console(std::string_view text, bool ends_line) {
    if (console_fd_ < 0) return;
    std::string out;
    if (prefix_ && !mid_line_) out = "[rank " + std::to_string(rank_) + "]:";
    out.append(text);
    if (ends_line) out.push_back('\n');
    write_all(console_fd_, out);
    mid_line_ = !ends_line;
}

void RankStream::line_done(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!first_nccl_error_ && run::nccl_error_line(line))
        first_nccl_error_ = Marked{std::string(line.substr(0, kMaxTailLine)), unix_millis()};
    keep(line);
}

void RankStream::keep(std::string_view line) {
    if (!keep_lines_) return;
    tail_.emplace_back(line.substr(0, kMaxTailLine));
    while (tail_.size() > keep_lines_) tail_.pop_front();
}

void RankStream::feed(std::string_view bytes, double now) {
    if (bytes.empty()) return;
    bytes_ += bytes.size();
    if (log_fd_ >= 0) write_all(log_fd_, bytes);
    if (partial_.empty()) partial_since_ = now;
    for (char c : bytes) {
        if (c == '\n') {
            to_console(partial_, true);
            partial_.clear();
            partial_since_ = now;
            line_done(tail_partial_);
            tail_partial_.clear();
            continue;
        }
        partial_.push_back(c);
        if (tail_partial_.size() < kMaxTailLine + 1) tail_partial_.push_back(c);
        if (partial_.size() >= kMaxLine) {
            to_console(partial_, false);
            partial_.clear();
        }
    }
}

void RankStream::flush_stale(double now, double after_seconds) {
    if (partial_.empty() || now - partial_since_ < after_seconds) return;
    to_console(partial_, false);
    partial_.clear();
}

void RankStream::finish() {
    if (!partial_.empty() || mid_line_) to_console(partial_, true);
    partial_.clear();
    mid_line_ = false;
    if (!tail_partial_.empty()) line_done(tail_partial_);
    tail_partial_.clear();
}

}  // namespace baton::launch
