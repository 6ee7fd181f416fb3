#include "serve/http_response.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/text_parse.hpp"

namespace baton::serve {

namespace {

std::string lowered(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trimmed_view(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Whether the comma-separated header value holds `token` (case-insensitive): "keep-alive, Upgrade".
bool has_token(std::string_view value, std::string_view token) {
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        if (lowered(trimmed_view(value.substr(0, comma))) == token) return true;
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return false;
}

}  // namespace

ResponseReader::State ResponseReader::fail(std::string why) {
    error_ = std::move(why);
    body_.clear();
    buffer_.clear();
    keep_alive_ = false;
    return state_ = State::bad;
}

ResponseReader::State ResponseReader::feed(std::string_view bytes) {
    if (state_ != State::incomplete) return state_;
    started_ = started_ || !bytes.empty();
    buffer_.append(bytes);
    return step();
}

ResponseReader::State ResponseReader::finish() {
    if (state_ != State::incomplete) return state_;
    if (part_ == Part::to_close) {
        keep_alive_ = false;
        return state_ = State::complete;
    }
    return fail(started_ ? "the answer was cut short" : "the connection closed without an answer");
}

// "HTTP/1.1 200 OK\r\n" and the header lines; `head_end` is just past the blank line.
ResponseReader::State ResponseReader::parse_head(std::size_t head_end) {
    const std::string_view head = std::string_view(buffer_).substr(0, head_end - 4);
    if (head.size() < 12 || head.substr(0, 7) != "HTTP/1." || head[8] != ' ' ||
        (head.size() > 12 && head[12] != ' ' && head[12] != '\r'))
        return fail("not an HTTP/1.x answer");
    const bool http10 = head[7] == '0';
    if (!http10 && head[7] != '1') return fail("not an HTTP/1.x answer");
    const std::optional<int> status = text::parse_digits<int>(head.substr(9, 3));
    if (!status || *status < 100) return fail("not an HTTP/1.x answer");
    std::optional<std::size_t> length;
    bool chunked = false, close = false, keep = false;
    std::size_t at = head.find("\r\n");
    while (at != std::string_view::npos) {
        at += 2;
        const std::size_t end = head.find("\r\n", at);
        const std::string_view line = head.substr(at, end == std::string_view::npos ? head.npos : end - at);
        at = end;
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0)
            return fail("a header line of the answer is not NAME: VALUE");
        const std::string name = lowered(line.substr(0, colon));
        const std::string_view value = trimmed_view(line.substr(colon + 1));
        if (name == "content-length") {
            const std::optional<std::size_t> n = text::parse_digits<std::size_t>(value);
            if (!n || (length && *length != *n)) return fail("the answer's Content-Length is not one number");
            length = n;
        } else if (name == "transfer-encoding") {
            // Only "chunked" is read (the last coding; anything else would need decoding).
            if (lowered(value) != "chunked") return fail("the answer's Transfer-Encoding is not chunked");
            chunked = true;
        } else if (name == "connection") {
            close = close || has_token(value, "close");
            keep = keep || has_token(value, "keep-alive");
        }
    }
    buffer_.erase(0, head_end);
    scanned_ = 0;
    if (*status < 200) return State::incomplete;  // 100 Continue and the like: the real answer follows
    status_ = *status;
    keep_alive_ = http10 ? keep && !close : !close;
    if (head_only_ || status_ == 204 || status_ == 304) {
        part_ = Part::done;
    } else if (chunked) {
        part_ = Part::chunk_size;
    } else if (length) {
        if (*length > kMaxBody) return fail("the answer is over 64 MiB");
        left_ = *length;
        body_.reserve(left_);
        part_ = left_ ? Part::fixed : Part::done;
    } else {
        part_ = Part::to_close;  // the body ends when the connection does
        keep_alive_ = false;
    }
    return State::incomplete;
}

ResponseReader::State ResponseReader::step() {
    std::size_t pos = 0;  // bytes of buffer_ consumed: erased once at the end, not chunk by chunk
    const auto take = [&](std::size_t n) {
        body_.append(buffer_, pos, n);
        pos += n;
        left_ -= n;
    };
    for (;;) {
        const std::size_t have = buffer_.size() - pos;
        switch (part_) {
            case Part::head: {
                const std::size_t from = scanned_ >= 3 ? scanned_ - 3 : 0;
                const std::size_t end = buffer_.find("\r\n\r\n", from);
                if (end == std::string::npos) {
                    if (buffer_.size() > kMaxHead) return fail("the answer's head is over 64 KiB");
                    scanned_ = buffer_.size();
                    return State::incomplete;
                }
                if (end + 4 > kMaxHead) return fail("the answer's head is over 64 KiB");
                if (parse_head(end + 4) == State::bad) return State::bad;
                break;
            }
            case Part::fixed:
            case Part::chunk_data:
                if (have == 0) {
                    buffer_.erase(0, pos);
                    return State::incomplete;
                }
                take(std::min(left_, have));
                if (left_ == 0) part_ = part_ == Part::fixed ? Part::done : Part::chunk_data_end;
                break;
            case Part::chunk_data_end:
                if (have < 2) {
                    buffer_.erase(0, pos);
                    return State::incomplete;
                }
                if (buffer_.compare(pos, 2, "\r\n") != 0) return fail("a chunk of the answer does not end in CRLF");
                pos += 2;
                part_ = Part::chunk_size;
                break;
            case Part::chunk_size:
            case Part::trailer: {
                const std::size_t end = buffer_.find("\r\n", pos);
                if (end == std::string::npos) {
                    if (have > 4096) return fail("a chunk line of the answer is over 4 KiB");
                    buffer_.erase(0, pos);
                    return State::incomplete;
                }
                if (end - pos > 4096) return fail("a chunk line of the answer is over 4 KiB");
                const std::string_view line = std::string_view(buffer_).substr(pos, end - pos);
                pos = end + 2;
                if (part_ == Part::trailer) {
                    if (line.empty()) part_ = Part::done;
                    break;
                }
                // "1a3f" or "1a3f;extension=value"
                std::string_view digits = trimmed_view(line.substr(0, line.find(';')));
                std::size_t size = 0;
                if (digits.empty() || digits.size() > 8) return fail("a chunk size of the answer is not hex");
                for (char c : digits) {
                    if (!std::isxdigit(static_cast<unsigned char>(c)))
                        return fail("a chunk size of the answer is not hex");
                    size = size * 16 +
                           static_cast<std::size_t>(std::isdigit(static_cast<unsigned char>(c))
                                                        ? c - '0'
                                                        : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
                }
                if (body_.size() + size > kMaxBody) return fail("the answer is over 64 MiB");
                left_ = size;
                part_ = size ? Part::chunk_data : Part::trailer;
                break;
            }
            case Part::to_close:
                if (body_.size() + have > kMaxBody) return fail("the answer is over 64 MiB");
                body_.append(buffer_, pos, have);
                buffer_.clear();
                return State::incomplete;
            case Part::done:
                buffer_.clear();
                return state_ = State::complete;
        }
    }
}

}  // namespace baton::serve
