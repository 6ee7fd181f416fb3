// One output stream of one rank: written whole to its log file as it comes, passed to the
// console in whole lines (so ranks' lines never mix mid-line; `[rank N]:` in front with --tee),
// and, for stderr, its last lines kept for the root-cause block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

#include "core/result.hpp"

namespace baton::launch {

class RankStream {
  public:
    // `console_fd`: where lines go (1 or 2), -1 for none (--local-ranks-filter). `keep_lines`: how
    // many last lines to keep (0: none).
    RankStream(int rank, int console_fd, bool prefix, std::string log_path, std::size_t keep_lines);
    RankStream(RankStream&& o) noexcept;
    RankStream& operator=(RankStream&&) = delete;
    ~RankStream();

    // Creates (truncates) the log file, and the directories above it that are missing. The
    // file is 0600 (a rank's stderr may hold tokens and paths), 0640 and group `group`'s when one
    // is given; directories baton creates are 0700 (0750). A link planted at the file's path is
    // refused (O_NOFOLLOW), not followed.
    Status open(std::optional<gid_t> group = std::nullopt);
    void feed(std::string_view bytes, double now);
    // A line left unfinished for `after_seconds` (a progress bar, a prompt) goes to the console.
    void flush_stale(double now, double after_seconds = 0.3);
    // The end of the stream: the unfinished line goes out.
    void finish();

    const std::deque<std::string>& tail() const { return tail_; }
    // Its first NCCL error line (run/nccl_errors.hpp, clipped), and when it came.
    struct Marked {
        std::string text;
        std::int64_t unix_ms = 0;
    };
    const std::optional<Marked>& first_nccl_error() const { return first_nccl_error_; }
    const std::string& log_path() const { return log_path_; }
    std::size_t bytes() const { return bytes_; }

  private:
    void to_console(std::string_view text, bool ends_line);
    void line_done(std::string_view line);
    void keep(std::string_view line);

    int rank_;
    int console_fd_;
    bool prefix_;
    std::string log_path_;
    std::size_t keep_lines_;
    int log_fd_ = -1;
    std::string partial_;  // the console's unfinished line
    double partial_since_ = 0;
    bool mid_line_ = false;     // the console got part of a line already (its prefix too)
    std::string tail_partial_;  // the tail's unfinished line
    std::deque<std::string> tail_;
    std::optional<Marked> first_nccl_error_;
    std::size_t bytes_ = 0;
};

// Creates `path` and its missing parents, each with exactly `mode` (the umask aside) and, when
// `group` is given, that group's. Directories already there are left as they are.
Status make_directories(const std::string& path, mode_t mode = 0700, std::optional<gid_t> group = std::nullopt);

}  // namespace baton::launch
