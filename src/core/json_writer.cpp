#include "core/json_writer.hpp"

#include <charconv>
#include <cmath>

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
    separator();
    append_escaped(out_, k);
    out_.push_back(':');
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
            case '"':
                out.append("\\\"");
                break;
            case '\\':
                out.append("\\\\");
                break;
            case '\n':
                out.append("\\n");
                break;
            case '\t':
                out.append("\\t");
                break;
            case '\r':
                out.append("\\r");
                break;
            default:
                if (c < 0x20 || c == 0x7F) {
                    out.append("\\u00");
                    out.push_back(hex[c >> 4]);
                    out.push_back(hex[c & 0xF]);
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
        ++i;
    }
    out.push_back('"');
}

}  // namespace baton
