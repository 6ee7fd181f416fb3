#include "core/printable.hpp"

#include <algorithm>

namespace baton {

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = byte(i);
    if (c < 0x80) return 1;
    const std::size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;  // 80-C1 (continuations, overlong leads), F5-FF, truncated
    for (std::size_t k = 1; k < n; ++k)
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
    const unsigned char c1 = byte(i + 1);
    if (c == 0xE0 && c1 < 0xA0) return 0;   // overlong
    if (c == 0xED && c1 >= 0xA0) return 0;  // UTF-16 surrogate
    if (c == 0xF0 && c1 < 0x90) return 0;   // overlong
    if (c == 0xF4 && c1 >= 0x90) return 0;  // above U+10FFFF
    return n;
}

namespace {

std::string make_printable(std::string_view s, bool keep_lines) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7F) {  // the common case: plain ASCII
            out.push_back(static_cast<char>(c));
            ++i;
            continue;
        }
        if (keep_lines && (c == '\n' || c == '\t')) {
            out.push_back(static_cast<char>(c));
            ++i;
            continue;
        }
        const std::size_t n = utf8_sequence_length(s, i);
        if (n <= 1 || (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0)) {
            out.push_back('?');  // a control character (C0, DEL, C1) or a byte that is not UTF-8
            i += n == 2 ? 2 : 1;
            continue;
        }
        out.append(s.substr(i, n));
        i += n;
    }
    return out;
}

}  // namespace

std::string escaped_line(std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t n = utf8_sequence_length(s, i);
        const bool c1 = n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;
        if (n > 1 && !c1) {
            out.append(s.substr(i, n));
            i += n;
        } else if (c >= 0x20 && c < 0x7F) {
            out.push_back(static_cast<char>(c));
            ++i;
        } else if (c == '\n' || c == '\t' || c == '\r') {
            out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
            ++i;
        } else {
            for (std::size_t k = 0; k < (c1 ? 2u : 1u); ++k) {
                const auto b = static_cast<unsigned char>(s[i + k]);
                out += "\\x";
                out.push_back(hex[b >> 4]);
                out.push_back(hex[b & 0xF]);
            }
            i += c1 ? 2 : 1;
        }
    }
    return out;
}

std::string printable(std::string_view s) {
    return make_printable(s, false);
}

std::string printable_text(std::string_view s) {
    return make_printable(s, true);
}

std::string sh_quoted(std::string_view word) {
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string sh_quoted_line(std::string_view word) {
    const auto control = [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    };
    if (std::none_of(word.begin(), word.end(), control)) return sh_quoted(word);
    std::string out = "$'";
    for (char c : word) {
        switch (c) {
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\'':
                out += "\\'";
                break;
            default:
                if (control(c)) {
                    static constexpr char hex[] = "0123456789abcdef";
                    const auto u = static_cast<unsigned char>(c);
                    out += "\\x";
                    out += hex[u >> 4];
                    out += hex[u & 15];
                } else {
                    out += c;
                }
        }
    }
    return out + "'";
}

}  // namespace baton
