// A file under /proc or /sys that stays open between ticks and is re-read with pread from
// offset 0: the kernel regenerates the text on every read, so one open() per file for the
// life of the sampler instead of one per tick (design.md, "Reading /proc is the hot path").
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace baton::os {

// A growable byte buffer that, unlike std::string::resize, never zero-fills: reading a
// 300-byte /proc file into a 4 KiB std::string costs a 4 KiB memset, a thousand times a tick.
class ReadBuffer {
  public:
    std::string_view view() const { return {data_.get(), size_}; }
    operator std::string_view() const { return view(); }  // NOLINT: parsers take string_view
    std::size_t size() const { return size_; }

  private:
    friend class KeptFile;
    void reserve(std::size_t n);

    std::unique_ptr<char[]> data_;
    std::size_t capacity_ = 0;
    std::size_t size_ = 0;
};

// The most read_all reads of one file: far above any real /proc or /sys file (a command line is
// at most a few MiB), so only a planted or corrupt file is cut.
inline constexpr std::size_t kMaxFileBytes = 16u << 20;

class KeptFile {
  public:
    KeptFile() = default;
    explicit KeptFile(const std::string& path) { open(path); }
    ~KeptFile();
    KeptFile(KeptFile&& other) noexcept : fd_(other.fd_), errno_(other.errno_) { other.fd_ = -1; }
    KeptFile& operator=(KeptFile&& other) noexcept;
    KeptFile(const KeptFile&) = delete;
    KeptFile& operator=(const KeptFile&) = delete;

    // Opens read-only (O_CLOEXEC, O_NONBLOCK) a regular file (EINVAL for anything else: a FIFO
    // or a device never blocks or floods a read). Returns false and remembers errno on failure.
    bool open(const std::string& path);
    bool is_open() const { return fd_ >= 0; }
    // errno of the last failed open or read (EACCES, ENOENT, ESRCH, ...).
    int last_errno() const { return errno_; }
    void close();

    // Replaces `buf` with the whole current content. `buf` keeps its capacity between calls,
    // so a steady state allocates nothing. Returns false when the read fails (for a
    // /proc/PID file: the process is gone).
    bool read_all(ReadBuffer& buf);

  private:
    int fd_ = -1;
    int errno_ = 0;
};

// One-shot read of a whole small file; false when it cannot be read.
bool read_file(const std::string& path, ReadBuffer& out);

}  // namespace baton::os
