#include "core/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstring>

namespace baton {

void JsonWriter::separator() {
    if (need_comma_) out_.push_back(',');
    need_comma_ = true;
}

void JsonWriter::begin_object() {
    separator();
    out_.push_back('{');
    need_comma_ = false;
}

void JsonWriter::end_object() {
    out_.push_back('}');
    need_comma_ = true;
}

void JsonWriter::begin_array() {
    separator();
    out_.push_back('[');
    need_comma_ = false;
}

void JsonWriter::end_array() {
    out_.push_back(']');
    need_comma_ = true;
}

void JsonWriter::key(std::string_view k) {
    // Keys are baton's own identifiers (ASCII letters, digits, '_'): no escaping needed.
    char buf[64];
    std::size_t n = 0;
    if (need_comma_) buf[n++] = ',';
    buf[n++] = '"';
    if (k.size() + 4 > sizeof buf) {  // longer than any key of ours: the slow way
        out_.append(buf, n).append(k).append("\":", 2);
    } else {
        std::memcpy(buf + n, k.data(), k.size());
        n += k.size();
        buf[n++] = '"';
        buf[n++] = ':';
        out_.append(buf, n);
    }
    need_comma_ = false;
}

void JsonWriter::value(std::string_view s) {
    separator();
    append_escaped(out_, s);
}

void JsonWriter::value(bool b) {
    separator();
    out_.append(b ? "true" : "false");
}

void JsonWriter::value(std::int64_t v) {
    separator();
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, end);
}

void JsonWriter::value(std::uint64_t v) {
    separator();
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, end);
}

void JsonWriter::value(double v) {
    separator();
    if (!std::isfinite(v)) {
        out_.append("null");
        return;
    }
    // Three decimals are more than any of our gauges can resolve, and keep the output short.
    double r = std::round(v * 1000.0) / 1000.0;
    char buf[40];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, r, std::chars_format::general, 15);
    out_.append(buf, end);
}

void JsonWriter::null() {
    separator();
    out_.append("null");
}

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if the bytes there are not one.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = byte(i);
    std::size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k)
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
    if (n == 3 && c == 0xE0 && byte(i + 1) < 0xA0) return 0;   // overlong
    if (n == 3 && c == 0xED && byte(i + 1) >= 0xA0) return 0;  // surrogate
    if (n == 4 && c == 0xF0 && byte(i + 1) < 0x90) return 0;   // overlong
    if (n == 4 && c == 0xF4 && byte(i + 1) >= 0x90) return 0;  // > U+10FFFF
    return n;
}

}  // namespace

void JsonWriter::append_escaped(std::string& out, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    out.push_back('"');
    std::size_t i = 0;
    while (i < s.size()) {
        // Copy the longest run that needs no escaping in one append: command lines are
        // almost all plain ASCII, and this is the hottest loop of a JSON snapshot.
        std::size_t run = i;
        while (run < s.size()) {
            auto c = static_cast<unsigned char>(s[run]);
            if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7F) break;
            ++run;
        }
        out.append(s.data() + i, run - i);
        i = run;
        if (i == s.size()) break;
        auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            std::size_t n = utf8_sequence_length(s, i);
            if (n == 0) {
                out.append("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER
                ++i;
            } else {
                out.append(s.substr(i, n));
                i += n;
            }
            continue;
        }
        switch (c) {
            case '"': out.append("\\\""); break;
            case '\\': out.append("\\\\"); break;
            case '\n': out.append("\\n"); break;
            case '\t': out.append("\\t"); break;
            case '\r': out.append("\\r"); break;
            default: {
                const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
                out.append(esc, 6);
            }
        }
        ++i;
    }
    out.push_back('"');
}

}  // namespace baton
