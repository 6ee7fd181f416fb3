#include "core/json_writer.hpp"

#include <charconv>
#include <cmath>

#include "core/printable.hpp"

namespace baton {

void JsonWriter::grow(std::size_t n) {
    // Grow in big steps: resize zero-fills, so it should happen a few times per snapshot,
    // not per field.
    std::size_t want = std::max(pos_ + n, out_.size() * 2);
    out_.resize(std::max<std::size_t>(want, 64 * 1024));
    spare_ = true;
}

void JsonWriter::begin_object() {
    separator();
    put('{');
    need_comma_ = false;
}

void JsonWriter::end_object() {
    put('}');
    need_comma_ = true;
}

void JsonWriter::begin_array() {
    separator();
    put('[');
    need_comma_ = false;
}

void JsonWriter::end_array() {
    put(']');
    need_comma_ = true;
}

void JsonWriter::key_bytes(const char* k, std::size_t n) {
    char* at = room(n + 4);
    std::size_t i = 0;
    if (need_comma_) at[i++] = ',';
    at[i++] = '"';
    std::memcpy(at + i, k, n);
    i += n;
    at[i++] = '"';
    at[i++] = ':';
    pos_ += i;
    need_comma_ = false;
}

void JsonWriter::value(std::string_view s) {
    separator();
    escaped(s);
}

void JsonWriter::value(bool b) {
    separator();
    if (b)
        put("true", 4);
    else
        put("false", 5);
}

void JsonWriter::value(std::int64_t v) {
    separator();
    char* at = room(24);
    pos_ = static_cast<std::size_t>(std::to_chars(at, at + 24, v).ptr - out_.data());
}

void JsonWriter::value(std::uint64_t v) {
    separator();
    char* at = room(24);
    pos_ = static_cast<std::size_t>(std::to_chars(at, at + 24, v).ptr - out_.data());
}

void JsonWriter::value(double v) {
    separator();
    if (!std::isfinite(v)) {
        put("null", 4);
        return;
    }
    // Three decimals are more than any of our gauges can resolve, and keep the output short.
    double r = std::round(v * 1000.0) / 1000.0;
    char* at = room(40);
    char* end = r == std::trunc(r) && std::fabs(r) < 9.0e15
                    ? std::to_chars(at, at + 40, static_cast<std::int64_t>(r)).ptr
                    : std::to_chars(at, at + 40, r, std::chars_format::general, 15).ptr;
    pos_ = static_cast<std::size_t>(end - out_.data());
}

void JsonWriter::null() {
    separator();
    put("null", 4);
}

void JsonWriter::escaped(std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    put('"');
    std::size_t i = 0;
    while (i < s.size()) {
        // Copy the longest run that needs no escaping in one go: command lines are almost
        // all plain ASCII, and this is the hottest loop of a JSON snapshot.
        std::size_t run = i;
        while (run < s.size()) {
            auto c = static_cast<unsigned char>(s[run]);
            if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7F) break;
            ++run;
        }
        put(s.data() + i, run - i);
        i = run;
        if (i == s.size()) break;
        auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            std::size_t n = utf8_sequence_length(s, i);
            if (n == 0) {
                put("\xEF\xBF\xBD", 3);  // U+FFFD REPLACEMENT CHARACTER
                ++i;
            } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
                // A C1 control, escaped: the same string, and JSON on a terminal stays inert.
                const auto c1 = static_cast<unsigned char>(s[i + 1]);
                const char esc[6] = {'\\', 'u', '0', '0', hex[c1 >> 4], hex[c1 & 0xF]};
                put(esc, 6);
                i += 2;
            } else {
                put(s.data() + i, n);
                i += n;
            }
            continue;
        }
        switch (c) {
            case '"':
                put("\\\"", 2);
                break;
            case '\\':
                put("\\\\", 2);
                break;
            case '\n':
                put("\\n", 2);
                break;
            case '\t':
                put("\\t", 2);
                break;
            case '\r':
                put("\\r", 2);
                break;
            default: {
                const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
                put(esc, 6);
            }
        }
        ++i;
    }
    put('"');
}

void JsonWriter::append_escaped(std::string& out, std::string_view s) {
    JsonWriter w(out);
    w.escaped(s);
}

}  // namespace baton
