// A byte stream read a piece at a time, for the trace reader (trace_events): a string in memory, a
// file (plain, or gzipped as tensorboard_trace_handler(use_gzip=True) writes it: told by its first
// bytes, read through zlib), or gzipped bytes in memory (a trace kept in the run history). The reader
// asks for the next piece when it has used one, so memory holds one piece of the file, never all
// of it. One thread owns a ByteSource.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace baton::profile {

class ByteSource {
  public:
    struct Impl {
        virtual ~Impl() = default;
        virtual std::string_view next() = 0;
        std::string error;
    };

    // `bytes` must outlive the source; gzipped bytes (0x1f 0x8b first) are inflated as they are read.
    static ByteSource of_bytes(std::string_view bytes);
    // Text taken as it is (never inflated), `piece` bytes at a time (0: the default 256 KiB).
    static ByteSource of_text(std::string_view text, std::size_t piece = 0);
    // Errors: the file missing (not_found), not readable (permission_denied), not a regular file.
    static Result<ByteSource> of_file(const std::string& path);

    // The next piece of the stream, valid until the next call; empty at the end or on an error.
    std::string_view next() { return impl_->next(); }
    // Why the stream ended early ("the gzip stream ends early (truncated)", a read error), or "".
    const std::string& error() const { return impl_->error; }

  private:
    explicit ByteSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
    std::unique_ptr<Impl> impl_;
};

}  // namespace baton::profile
