#include "profile/byte_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include <zlib.h>

namespace baton::profile {

namespace {

constexpr std::size_t kPiece = 1 << 18;

bool gzipped(std::string_view head) {
    return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
           static_cast<unsigned char>(head[1]) == 0x8b;
}

// Inflates gzip members (several in a row, as `cat a.gz b.gz` makes) from what `more` gives.
class Inflater {
  public:
    Inflater() { ok_ = inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK; }  // 16: the gzip wrapper
    ~Inflater() {
        if (ok_) inflateEnd(&zs_);
    }
    Inflater(const Inflater&) = delete;
    Inflater& operator=(const Inflater&) = delete;

    // Inflates into `out` from `in` (advanced past what was used); the bytes made, 0 when `in` is
    // used up or the stream ended; `error` set on a broken stream.
    std::size_t inflate_some(std::string_view& in, char* out, std::size_t room, std::string& error) {
        if (!ok_) {
            error = "cannot start zlib";
            return 0;
        }
        for (;;) {
            if (ended_) {
                // Another member may follow.
                if (in.empty()) return 0;
                if (!gzipped(in)) return 0;  // trailing bytes after the last member are not read
                inflateReset(&zs_);
                ended_ = false;
            }
            zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
            zs_.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), UINT_MAX));
            zs_.next_out = reinterpret_cast<Bytef*>(out);
            zs_.avail_out = static_cast<uInt>(room);
            const int rc = inflate(&zs_, Z_NO_FLUSH);
            in.remove_prefix(static_cast<std::size_t>(reinterpret_cast<const char*>(zs_.next_in) - in.data()));
            const std::size_t made = room - zs_.avail_out;
            if (rc == Z_STREAM_END) {
                ended_ = true;
                if (made) return made;
                continue;
            }
            if (rc == Z_BUF_ERROR && in.empty()) return made;  // wants more input
            if (rc != Z_OK) {
                error = std::string("a broken gzip stream (") + (zs_.msg ? zs_.msg : "zlib") + ")";
                return 0;
            }
            if (made) return made;
            if (in.empty()) return 0;
        }
    }
    bool ended() const { return ended_; }

  private:
    z_stream zs_{};
    bool ok_ = false, ended_ = false;
};

class Plain : public ByteSource::Impl {
  public:
    explicit Plain(std::string_view b, std::size_t piece = kPiece) : bytes_(b), piece_(piece ? piece : kPiece) {}
    std::string_view next() override {
        std::string_view piece = bytes_.substr(0, piece_);
        bytes_.remove_prefix(piece.size());
        return piece;
    }

  private:
    std::string_view bytes_;
    std::size_t piece_;
};

class GzipBytes : public ByteSource::Impl {
  public:
    explicit GzipBytes(std::string_view b) : in_(b), out_(kPiece) {}
    std::string_view next() override {
        if (!error.empty()) return {};
        const std::size_t n = z_.inflate_some(in_, out_.data(), out_.size(), error);
        if (n == 0 && error.empty() && !z_.ended()) error = "the gzip stream ends early (truncated)";
        return {out_.data(), n};
    }

  private:
    std::string_view in_;
    std::vector<char> out_;
    Inflater z_;
};

// A file read a piece at a time, inflated when it starts as gzip does.
class File : public ByteSource::Impl {
  public:
    explicit File(int fd) : fd_(fd), raw_(kPiece), out_(kPiece) {}
    ~File() override { ::close(fd_); }
    File(const File&) = delete;
    File& operator=(const File&) = delete;

    std::string_view next() override {
        if (!error.empty()) return {};
        if (first_) {
            first_ = false;
            if (!fill()) return {};
            gz_ = gzipped(in_);
        }
        if (!gz_) {
            if (in_.empty() && !fill()) return {};
            std::string_view piece = in_;
            in_ = {};
            return piece;
        }
        for (;;) {
            const std::size_t n = z_.inflate_some(in_, out_.data(), out_.size(), error);
            if (n) return {out_.data(), n};
            if (!error.empty()) return {};
            if (in_.empty() && fill()) continue;
            if (!z_.ended() && error.empty()) error = "the gzip stream ends early (truncated)";
            return {};
        }
    }

  private:
    // Reads the next raw piece into in_; false at the end or on an error.
    bool fill() {
        for (;;) {
            const ssize_t n = ::read(fd_, raw_.data(), raw_.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) error = std::strerror(errno);
            if (n <= 0) return false;
            in_ = std::string_view(raw_.data(), static_cast<std::size_t>(n));
            return true;
        }
    }

    int fd_;
    std::vector<char> raw_, out_;
    std::string_view in_;
    bool first_ = true, gz_ = false;
    Inflater z_;
};

}  // namespace

ByteSource ByteSource::of_bytes(std::string_view bytes) {
    if (gzipped(bytes)) return ByteSource(std::make_unique<GzipBytes>(bytes));
    return ByteSource(std::make_unique<Plain>(bytes));
}

ByteSource ByteSource::of_text(std::string_view text, std::size_t piece) {
    return ByteSource(std::make_unique<Plain>(text, piece));
}

Result<ByteSource> ByteSource::of_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return make_error(errno == ENOENT                     ? ErrorCode::not_found
                          : errno == EACCES || errno == EPERM ? ErrorCode::permission_denied
                                                              : ErrorCode::failed,
                          "cannot read " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return make_error(path + " is not a regular file");
    }
    return ByteSource(std::make_unique<File>(fd));
}

}  // namespace baton::profile
