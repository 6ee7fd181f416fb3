#include "core/text_parse.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace baton::text {

void skip_blanks(std::string_view& s) {
    std::size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    s.remove_prefix(i);
}

std::optional<std::uint64_t> take_u64(std::string_view& s) {
    std::string_view t = s;
    skip_blanks(t);
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc{}) return std::nullopt;
    s = t.substr(static_cast<std::size_t>(end - t.data()));
    return v;
}

std::optional<std::int64_t> take_i64(std::string_view& s) {
    std::string_view t = s;
    skip_blanks(t);
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc{}) return std::nullopt;
    s = t.substr(static_cast<std::size_t>(end - t.data()));
    return v;
}

std::optional<double> take_double(std::string_view& s) {
    std::string_view t = s;
    skip_blanks(t);
    double v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::fixed);
    if (ec != std::errc{}) return std::nullopt;
    s = t.substr(static_cast<std::size_t>(end - t.data()));
    return v;
}

std::string_view take_word(std::string_view& s) {
    skip_blanks(s);
    std::size_t i = 0;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\n') ++i;
    std::string_view w = s.substr(0, i);
    s.remove_prefix(i);
    return w;
}

std::string_view take_line(std::string_view& s) {
    std::size_t nl = s.find('\n');
    std::string_view line = s.substr(0, nl);
    s.remove_prefix(nl == std::string_view::npos ? s.size() : nl + 1);
    return line;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
    auto v = take_u64(s);
    if (!v) return std::nullopt;
    skip_blanks(s);
    if (!s.empty() && s != "\n") return std::nullopt;
    return v;
}

std::optional<std::string_view> value_after_key(std::string_view line, std::string_view key) {
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') return std::nullopt;
    std::string_view v = line.substr(key.size() + 1);
    skip_blanks(v);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\n')) v.remove_suffix(1);
    return v;
}

namespace {

constexpr unsigned kMaxCpu = 65535;

std::optional<unsigned> parse_cpu(std::string_view s) {
    if (s.empty() || s.size() > 5) return std::nullopt;
    unsigned v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    return v <= kMaxCpu ? std::optional<unsigned>(v) : std::nullopt;
}

}  // namespace

namespace {

// The next comma-separated item of `text`, blanks around it trimmed; `text` moves past it.
std::string_view next_list_item(std::string_view& text) {
    const std::size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) part.remove_suffix(1);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.front()))) part.remove_prefix(1);
    return part;
}

}  // namespace

std::vector<unsigned> parse_cpu_list(std::string_view text) {
    std::vector<unsigned> out;
    while (!text.empty()) {
        const std::string_view part = next_list_item(text);
        const std::size_t dash = part.find('-');
        const auto lo = parse_cpu(part.substr(0, dash));
        const auto hi = dash == std::string_view::npos ? lo : parse_cpu(part.substr(dash + 1));
        if (!lo || !hi || *hi < *lo) continue;
        for (unsigned c = *lo; c <= *hi; ++c) out.push_back(c);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::optional<std::vector<std::string>> parse_gpu_list(std::string_view text) {
    std::vector<std::string> out;
    auto add = [&out](std::string id) {
        if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(std::move(id));
    };
    while (!text.empty()) {
        const std::string_view part = next_list_item(text);
        if (part.empty()) return std::nullopt;
        if (std::isdigit(static_cast<unsigned char>(part.front()))) {
            const std::size_t dash = part.find('-');
            const auto lo = parse_digits<unsigned>(part.substr(0, dash));
            const auto hi = dash == std::string_view::npos ? lo : parse_digits<unsigned>(part.substr(dash + 1));
            if (!lo || !hi || *hi < *lo || *hi >= 4096) return std::nullopt;
            for (unsigned g = *lo; g <= *hi; ++g) add(std::to_string(g));
            continue;
        }
        // A UUID ("GPU-", "MIG-" and hex digits with dashes), or a prefix of one.
        if (part.size() < 8 || part.size() > 96) return std::nullopt;
        for (char c : part)
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return std::nullopt;
        add(std::string(part));
    }
    return out;
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

}  // namespace baton::text
